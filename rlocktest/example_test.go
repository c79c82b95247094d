package rlocktest_test

import (
	"context"
	"fmt"

	"github.com/onsi/gomega"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

// The matchers outside a Ginkgo suite, with a Gomega that prints failures.
func ExampleBeLocked() {
	srv, err := rlocktest.Start()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	rdb := srv.Client()
	defer rdb.Close()
	client, _ := rlock.NewClient(rdb, rlock.WithClientID("example"))
	defer client.Close()

	g := gomega.NewGomega(func(message string, _ ...int) { fmt.Println(message) })
	ctx := ctxowner.WithID(context.Background(), "job-1")
	lock := client.NewLock("report")
	g.Expect(lock).To(rlocktest.BeLocked()) // fails: nobody holds it yet

	_ = lock.Lock(ctx)
	_ = lock.Lock(ctx)
	g.Expect(lock).To(rlocktest.BeLocked())
	g.Expect(lock).To(rlocktest.BeHeldBy(ctx))
	g.Expect(lock).To(rlocktest.HaveTotalHoldCount(2))
	fmt.Println("held twice by job-1")
	// Output:
	// Expected lock "report" to be locked, but IsLocked returned false
	//     state in Redis: none, hash fields {}, no key
	// held twice by job-1
}
