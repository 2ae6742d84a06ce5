package typename

import (
	"reflect"
	"testing"
	"time"
)

type local struct{}

func TestOf(t *testing.T) {
	const pkg = "github.com/ginformer/ginformer/internal/typename"
	tests := []struct {
		t    reflect.Type
		want string
	}{
		{reflect.TypeFor[int](), "int"},
		{reflect.TypeFor[string](), "string"},
		{reflect.TypeFor[local](), pkg + ".local"},
		{reflect.TypeFor[*local](), "*" + pkg + ".local"},
		{reflect.TypeFor[[]*local](), "[]*" + pkg + ".local"},
		{reflect.TypeFor[**time.Time](), "**time.Time"},
		{reflect.TypeFor[map[string]string](), "map[string]string"},
		{reflect.TypeFor[[2]int](), "[2]int"},
	}
	for _, tt := range tests {
		if got := Of(tt.t); got != tt.want {
			t.Errorf("Of(%v) = %q, want %q", tt.t, got, tt.want)
		}
	}
}
