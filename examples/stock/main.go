// Command stock plays the seeds' stock deduction: 10 workers on two
// instances each try to buy one of 5 items, reading the stock and writing
// back stock-1 after a slow step. Without a lock they oversell; with a
// goredisson lock exactly 5 are sold. Exits 1 when the locked run
// oversells.
//
//	go run ./examples/stock [--redis ADDR]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/internal/embedded"
	"github.com/goredisson/goredisson/internal/scenario"
	"github.com/goredisson/goredisson/rlock"
)

func main() {
	addr := flag.String("redis", "", "Redis address (default: start a private one)")
	workers := flag.Int("workers", 10, "workers, one purchase each")
	items := flag.Int("items", 5, "items in stock")
	flag.Parse()
	if err := run(*addr, *workers, *items); err != nil {
		fmt.Fprintln(os.Stderr, "stock:", err)
		os.Exit(1)
	}
}

func run(addr string, workers, items int) error {
	ctx := context.Background()
	r, err := embedded.Open(ctx, addr)
	if err != nil {
		return err
	}
	defer r.Close()
	var rdbs []redis.UniversalClient
	var locks []*rlock.Client
	for range 2 {
		rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
		defer rdb.Close()
		c, err := rlock.NewClient(rdb)
		if err != nil {
			return err
		}
		defer c.Close()
		rdbs, locks = append(rdbs, rdb), append(locks, c)
	}
	key := "example:stock:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	defer rdbs[0].Del(ctx, key)
	for _, l := range [][]*rlock.Client{nil, locks} {
		res, err := scenario.Stock(ctx, rdbs, l, key, workers, items, 2*time.Millisecond)
		if err != nil {
			return err
		}
		label := "no lock   "
		if l != nil {
			label = "goredisson"
		}
		fmt.Printf("%s: %d workers, %d items: sold %d, stock left %d, oversold %d\n", label, res.Workers, res.Items, res.Sold, res.StockLeft, res.Oversold)
		if l != nil && (res.Oversold != 0 || res.Sold != min(workers, items)) {
			return fmt.Errorf("locked run sold %d of %d items", res.Sold, items)
		}
	}
	return nil
}
