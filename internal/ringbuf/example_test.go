package ringbuf_test

import (
	"fmt"

	"github.com/ginformer/ginformer/internal/ringbuf"
)

func ExampleRing() {
	var r ringbuf.Ring[string] // the zero value is ready to use
	r.Push("a")
	r.Push("b")
	r.Push("c")
	v, _ := r.Pop()
	fmt.Println(v, r.Len())
	for r.Len() > 0 {
		s, _ := r.Pop()
		fmt.Print(s, " ")
	}
	fmt.Println()
	// Output:
	// a 2
	// b c
}
