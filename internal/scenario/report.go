package scenario

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// WriteSaleTable writes the summary table of flash sales of coupons
// coupons, one row per result.
func WriteSaleTable(w io.Writer, coupons int, results ...SaleResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "run\trequests\torders\tstock left\toversold\tduplicate buyers\thandoff p50\thandoff p99\ttime\t\n")
	for _, r := range results {
		name, p50, p99 := "no lock", "-", "-"
		if r.Locked {
			name, p50, p99 = "goredisson", fmtDur(r.HandoffP50), fmtDur(r.HandoffP99)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%d\t%d\t%d\t%s\t%s\t%s\t\n", name, r.Requests, r.Orders, coupons, r.StockLeft, r.Oversold, r.DuplicateBuyers, p50, p99, fmtDur(r.Elapsed))
	}
	return tw.Flush()
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

// Progress returns a callback for FlashSale.Progress that redraws one
// progress line on w, at most every 50 ms, when tty is true, and prints
// only the final count otherwise. Call the returned done func at the end.
func Progress(w io.Writer, label string, total int, tty bool) (progress func(int), done func()) {
	var mu sync.Mutex
	var last time.Time
	var max int
	draw := func(n int) {
		const width = 30
		bar := strings.Repeat("#", n*width/total) + strings.Repeat(".", width-n*width/total)
		fmt.Fprintf(w, "\r  %-11s [%s] %d/%d requests", label, bar, n, total)
	}
	progress = func(n int) {
		mu.Lock()
		defer mu.Unlock()
		if n > max {
			max = n
		}
		if tty && time.Since(last) >= 50*time.Millisecond {
			last = time.Now()
			draw(max)
		}
	}
	done = func() {
		mu.Lock()
		defer mu.Unlock()
		draw(max)
		fmt.Fprintln(w)
	}
	return progress, done
}
