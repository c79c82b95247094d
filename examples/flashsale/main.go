// Command flashsale plays the seeds' coupon flash sale: 200 buyers click
// "buy" twice each on two service instances, for 50 coupons, first without
// a lock and then with goredisson locks (one per buyer for "one order per
// buyer", one for the stock). It prints the summary table and exits 1 when
// the locked run oversells or creates a duplicate order.
//
//	go run ./examples/flashsale [--redis ADDR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/goredisson/goredisson/internal/embedded"
	"github.com/goredisson/goredisson/internal/scenario"
)

func main() {
	addr := flag.String("redis", "", "Redis address (default: start a private one)")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "flashsale:", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	ctx := context.Background()
	r, err := embedded.Open(ctx, addr)
	if err != nil {
		return err
	}
	defer r.Close()
	sale := scenario.DefaultFlashSale("example:flashsale:" + strconv.FormatInt(time.Now().UnixNano(), 36))
	in, err := scenario.OpenInstances(r.Addr, sale.Workers)
	if err != nil {
		return err
	}
	defer in.Close()
	defer in.Redis[0].Del(ctx, sale.Prefix+":stock", sale.Prefix+":orders")
	bare, err := sale.Run(ctx, in.Redis, nil)
	if err != nil {
		return err
	}
	locked, err := sale.Run(ctx, in.Redis, &in.Locks)
	if err != nil {
		return err
	}
	if err := scenario.WriteSaleTable(os.Stdout, sale.Coupons, bare, locked); err != nil {
		return err
	}
	if locked.Orders != sale.Coupons || locked.Oversold != 0 || locked.DuplicateBuyers != 0 {
		return fmt.Errorf("locked run: %d orders, %d oversold, %d duplicate buyers", locked.Orders, locked.Oversold, locked.DuplicateBuyers)
	}
	fmt.Printf("goredisson: exactly %d orders, one per buyer\n", locked.Orders)
	return nil
}
