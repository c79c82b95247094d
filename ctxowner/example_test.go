package ctxowner_test

import (
	"context"
	"fmt"

	"github.com/goredisson/goredisson/ctxowner"
)

// A context owner travels with the context, so the goroutine that unlocks
// may differ from the one that locked.
func Example() {
	ctx := ctxowner.WithID(context.Background(), "job-7")
	done := make(chan string)
	go func() { done <- ctxowner.Of(ctx) }()
	fmt.Println(ctxowner.Of(ctx) == <-done)
	fmt.Println(ctxowner.Of(ctx))
	// Output:
	// true
	// ctx:job-7
}
