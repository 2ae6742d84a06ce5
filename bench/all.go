package bench

// one wraps a single workload as a builder.
func one(f func(Config) Workload) Builder {
	return func(cfg Config) []Workload { return []Workload{f(cfg)} }
}

// All returns every workload group, in report order.
func All(cfg Config) []Builder {
	bs := []Builder{
		func(c Config) []Workload { return fifoWorkloads(c, c.n(10_000, 10_000)) },
		func(c Config) []Workload { return fifoWorkloads(c, c.n(100_000, 100_000)) },
		func(c Config) []Workload { return indexerWorkloads(c, c.n(10_000, 10_000)) },
		func(c Config) []Workload { return indexerWorkloads(c, c.n(100_000, 100_000)) },
		queryWorkloads,
		one(listersWorkload),
		one(memoryWorkload),
		readWriteWorkloads,
		one(func(c Config) Workload { return syncWorkload(c, c.n(10_000, 10_000), Full) }),
		one(func(c Config) Workload { return syncWorkload(c, c.n(100_000, 100_000), Full) }),
	}
	if !cfg.Quick {
		// 1M full pods (about 8 GB each for the template, the list response
		// and client-go's copy) do not fit this machine: small pods there.
		bs = append(bs, one(func(c Config) Workload { return syncWorkload(c, c.n(1_000_000, 1_000_000), Small) }))
	}
	bs = append(bs,
		one(func(c Config) Workload { return eventsWorkload(c, 1) }),
		one(func(c Config) Workload { return eventsWorkload(c, 10) }),
		one(func(c Config) Workload { return latencyWorkload(c, 1, 0) }),
		one(func(c Config) Workload { return latencyWorkload(c, 10, 0) }),
		one(func(c Config) Workload { return latencyWorkload(c, 1, 10_000) }),
		one(func(c Config) Workload { return latencyWorkload(c, 10, 10_000) }),
		one(func(c Config) Workload { return latencyWorkload(c, 1, 50_000) }),
		one(relistWorkload),
		floorWorkloads,
	)
	return bs
}

// Filter keeps the builders whose first workload's group or name matches re
// (builders are called once here with a tiny configuration to learn names).
func Filter(bs []Builder, re interface{ MatchString(string) bool }) []Builder {
	var out []Builder
	for _, b := range bs {
		ws := b(Config{Quick: true, Scale: 1000, Count: 1})
		if len(ws) > 0 && re.MatchString(ws[0].Metrics[0].Group+" "+ws[0].Metrics[0].Name) {
			out = append(out, b)
		}
	}
	return out
}
