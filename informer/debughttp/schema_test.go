package debughttp

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The JSON documents are the package's contract: their keys, and the JSON
// type of each, are frozen here, and the package doc (doc.go) names every
// one of them. A change to a view type's JSON shows up as a diff of this
// list; change the package doc with it.
func TestJSONSchema(t *testing.T) {
	page := []string{
		"time time",
		"informers []object",
		"informers[].name string",
		"informers[].types string",
		"informers[].running bool",
		"informers[].synced bool",
		"informers[].appliedVersion string omitted",
		"informers[].appliedAt time omitted",
		"informers[].lastListAt time omitted",
		"informers[].lastEventAt time omitted",
		"informers[].lastError string omitted",
		"informers[].lastErrorAt time omitted",
		"informers[].failingSince time omitted",
		"informers[].staleSeconds number omitted",
		"informers[].livenessBoundSeconds number omitted",
		"informers[].lists number",
		"informers[].watchRestarts number",
		"informers[].errors object omitted",
		"informers[].queueDepth number",
		"informers[].objects number",
		"informers[].restored bool",
		"informers[].restoredVersion string omitted",
		"informers[].restoredAt time omitted",
		"informers[].snapshotVersion string omitted",
		"informers[].snapshotAt time omitted",
		"informers[].snapshotBytes number omitted",
		"informers[].start string omitted",
		"informers[].startReason string omitted",
		"informers[].stuckThresholdSeconds number",
		"informers[].indexes []object",
		"informers[].indexes[].name string",
		"informers[].indexes[].values number",
		"informers[].handlers []object",
		"informers[].handlers[].name string",
		"informers[].handlers[].coalesce bool",
		"informers[].handlers[].synced bool",
		"informers[].handlers[].backlog number",
		"informers[].handlers[].runningSeconds number",
		"informers[].handlers[].runningKey string omitted",
		"informers[].handlers[].stuck bool",
		"informers[].handlers[].stuckCalls number",
		"informers[].longestCall string omitted",
		"informers[].problems []object",
		"informers[].problems[].level string",
		"informers[].problems[].text string",
	}
	keys := []string{
		"informer string",
		"q string omitted",
		"match string",
		"limit number",
		"keys []string",
		"matched number",
		"offset number",
		"hasPrev bool",
		"hasNext bool",
	}
	assert.Equal(t, page, jsonSchema(reflect.TypeFor[pageView](), ""), "the page document")
	assert.Equal(t, keys, jsonSchema(reflect.TypeFor[keysPage](), ""), "the keys document")

	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	for _, line := range append(page, keys...) {
		path, _, _ := strings.Cut(line, " ")
		key := path[strings.LastIndex(path, ".")+1:]
		// A line of the schema starts with the key (or a list of keys);
		// objects in a list are written {"key": type, ...}.
		assert.Regexp(t, regexp.MustCompile(`(?m)^//\t+(\S+, )*`+key+`\b|"`+key+`": `), string(doc), "the package doc's schema lists %s", path)
	}
}

// jsonSchema lists the JSON keys of t's values under prefix, with their
// JSON type and whether they are omitted when empty, in field order.
func jsonSchema(t reflect.Type, prefix string) []string {
	var out []string
	for f := range t.Fields() {
		tag, ok := f.Tag.Lookup("json")
		if !ok || tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		line := prefix + name + " " + jsonType(f.Type)
		if strings.Contains(opts, "omitempty") {
			line += " omitted"
		}
		out = append(out, line)
		elem := f.Type
		if elem.Kind() == reflect.Slice {
			elem = elem.Elem()
		}
		if elem.Kind() == reflect.Struct && elem != reflect.TypeFor[time.Time]() {
			sub := prefix + name
			if f.Type.Kind() == reflect.Slice {
				sub += "[]"
			}
			out = append(out, jsonSchema(elem, sub+".")...)
		}
	}
	return out
}

func jsonType(t reflect.Type) string {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[time.Time]():
		return "time"
	case t.Kind() == reflect.Slice:
		return "[]" + jsonType(t.Elem())
	case t.Kind() == reflect.Struct, t.Kind() == reflect.Map:
		return "object"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Bool:
		return "bool"
	default:
		return "number"
	}
}
