package debughttp

// Names for the tests of package debughttp_test, which decode the JSON
// documents with the page's own types (schema_test.go checks their JSON
// keys against the schema the package doc states).
type (
	Page     = pageView
	Problem  = problem
	KeysPage = keysPage
)

// The limits of a page of keys.
const (
	DefaultKeysLimit = defaultKeysLimit
	MaxKeysLimit     = maxKeysLimit
	MaxSearchLen     = maxSearchLen
)
