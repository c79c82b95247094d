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

func runDemo(ctx context.Context, env *cli, args []string) error {
	fs, addr := env.flags("demo", "[flags]",
		"Plays the seeds' coupon flash sale twice against one Redis: 200 buyers click\n"+
			"\"buy\" twice each, on two service instances (two connections, 16 goroutines\n"+
			"each), for 50 coupons; first without a lock, then with goredisson locks (one\n"+
			"per buyer for the order check, one for the stock). Without --redis it starts a\n"+
			"private redis-server ($REDIS_SERVER, else redis-server on PATH) on a free\n"+
			"loopback port, or an in-process Redis when there is none or it does not\n"+
			"start, and says which.", "")
	sale := scenario.DefaultFlashSale("")
	fs.IntVar(&sale.Coupons, "coupons", sale.Coupons, "coupons for sale")
	fs.IntVar(&sale.Buyers, "buyers", sale.Buyers, "buyers (each clicks twice)")
	fs.IntVar(&sale.Workers, "workers", sale.Workers, "goroutines per instance")
	if err := env.parse(fs, args); err != nil {
		return err
	}
	if err := checkSale(fs, &sale); err != nil {
		return err
	}
	var ropt *redis.Options
	if *addr != "" {
		var err error
		if ropt, err = redisOptions(*addr); err != nil {
			return err
		}
	}
	r, err := embedded.OpenOptions(ctx, ropt)
	if err != nil {
		return fail(exitUnavailable, "%s", plain(err))
	}
	defer r.Close()
	fmt.Fprintf(env.stdout, "Redis: %s\n", r.What)
	fmt.Fprintf(env.stdout, "Flash sale: %d coupons, %d buyers clicking twice, 2 instances x %d goroutines\n\n",
		sale.Coupons, sale.Buyers, sale.Workers)

	in, err := scenario.OpenInstancesOptions(r.Options, sale.Workers)
	if err != nil {
		return fail(exitFailure, "connecting to %s: %s", r.Addr, plain(err))
	}
	defer in.Close()
	rdbs := in.Redis
	sale.Prefix = "rlockctl:demo:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	defer rdbs[0].Del(context.Background(), sale.Prefix+":stock", sale.Prefix+":orders")
	tty := isTerminal(os.Stdout) && env.stdout == os.Stdout

	var results []scenario.SaleResult
	for _, locked := range []bool{false, true} {
		label := "no lock"
		var lc *[2]*rlock.Client
		if locked {
			label, lc = "goredisson", &in.Locks
		}
		progress, done := scenario.Progress(env.stdout, label, sale.Requests(), tty)
		sale.Progress = progress
		res, err := sale.Run(ctx, rdbs, lc)
		done()
		if err != nil {
			return fail(exitFailure, "the %s run failed: %s", label, plain(err))
		}
		results = append(results, res)
	}
	return env.saleReport(&sale, results[0], results[1])
}

// checkSale refuses bad usage of demo: arguments, or a count that is not
// positive.
func checkSale(fs *flag.FlagSet, sale *scenario.FlashSale) error {
	if fs.NArg() > 0 {
		return fail(exitUsage, "unexpected arguments %q", fs.Args())
	}
	if sale.Coupons <= 0 || sale.Buyers <= 0 || sale.Workers <= 0 {
		return fail(exitUsage, "--coupons, --buyers and --workers must be positive")
	}
	return nil
}

// saleReport prints the two runs' table and verdicts, and fails when the
// locked run sold other than it should.
func (env *cli) saleReport(sale *scenario.FlashSale, bare, locked scenario.SaleResult) error {
	fmt.Fprintln(env.stdout)
	if err := scenario.WriteSaleTable(env.stdout, sale.Coupons, bare, locked); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "\nWithout a lock: %d coupon(s) oversold, %d buyer(s) with more than one order.\n", bare.Oversold, bare.DuplicateBuyers)
	fmt.Fprintf(env.stdout, "With goredisson: %d orders for %d coupons, %d oversold, %d duplicate buyers; stock lock handed over in %s (p50).\n",
		locked.Orders, sale.Coupons, locked.Oversold, locked.DuplicateBuyers, locked.HandoffP50.Round(time.Microsecond))
	want := min(sale.Coupons, sale.Buyers)
	if locked.Orders != want || locked.Oversold != 0 || locked.DuplicateBuyers != 0 || locked.StockLeft != sale.Coupons-want {
		return fail(exitFailure, "the locked run is wrong: want %d orders and no oversell or duplicates", want)
	}
	return nil
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
