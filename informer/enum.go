package informer

import "strconv"

// enumString is the String method of an enumeration: names[v], or
// "typ(v)" for a value that has no name in names.
func enumString(names []string, typ string, v uint8) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(int(v)) + ")"
}
