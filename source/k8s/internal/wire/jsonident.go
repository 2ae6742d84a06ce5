package wire

// JSONIdentity reads an object's "namespace/name" (appended to buf) and
// resourceVersion from its raw JSON bytes without decoding it, as
// [Identity] does from protobuf, for [Known.Lookup]. The whole object is
// scanned (not decoded), so that an object that would not decode, or whose
// metadata a repeated key changes, is not taken for the one known. ok is
// false when the object is not well-formed JSON, lacks a name or version,
// or holds them in a form the scan does not read (escaped, or not
// strings): the caller then decodes it.
func JSONIdentity(obj []byte, buf []byte) (key, version []byte, ok bool) {
	d := jsonDec{data: obj}
	if c, err := d.peek(); err != nil || c != '{' {
		return nil, nil, false
	}
	var name, ns []byte
	_ = d.enter()
	for first := true; ; first = false {
		k, end, err := d.objKey(first)
		if err != nil {
			return nil, nil, false
		}
		if end {
			break
		}
		if string(k) != "metadata" {
			if _, err := d.skip(); err != nil {
				return nil, nil, false
			}
			continue
		}
		if !d.identityMeta(&name, &ns, &version) {
			return nil, nil, false
		}
	}
	if d.end() != nil || len(name) == 0 || len(version) == 0 {
		return nil, nil, false
	}
	buf = append(append(append(buf[:0], ns...), '/'), name...)
	return buf, version, true
}

// identityMeta reads the metadata object at d.off for JSONIdentity.
func (d *jsonDec) identityMeta(name, ns, version *[]byte) bool {
	if c, err := d.peek(); err != nil || c != '{' {
		return false
	}
	if d.enter() != nil {
		return false
	}
	for first := true; ; first = false {
		k, end, err := d.objKey(first)
		if err != nil {
			return false
		}
		if end {
			return true
		}
		var to *[]byte
		switch string(k) {
		case "name":
			to = name
		case "namespace":
			to = ns
		case "resourceVersion":
			to = version
		default:
			if _, err := d.skip(); err != nil {
				return false
			}
			continue
		}
		if c, err := d.peek(); err != nil || c != '"' {
			return false
		}
		raw, simple, err := d.scanStr()
		if err != nil || !simple {
			return false
		}
		*to = raw
	}
}
