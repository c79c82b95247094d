package ctxowner_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/goredisson/goredisson/ctxowner"
)

func TestContextOwnerCrossesGoroutines(t *testing.T) {
	ctx := ctxowner.New(context.Background())
	want := ctxowner.Of(ctx)
	if !strings.HasPrefix(want, ctxowner.ContextPrefix) {
		t.Fatalf("Of(ctx) = %q, want the %q prefix", want, ctxowner.ContextPrefix)
	}
	got := make(chan string)
	go func() { got <- ctxowner.Of(ctx) }()
	if g := <-got; g != want {
		t.Fatalf("another goroutine sees owner %q, want %q", g, want)
	}
}

func TestNewIsUnique(t *testing.T) {
	seen := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				id, ok := ctxowner.From(ctxowner.New(context.Background()))
				mu.Lock()
				if !ok || seen[id] {
					t.Errorf("duplicate or missing id %q", id)
				}
				seen[id] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func TestWithID(t *testing.T) {
	bg := context.Background()
	if ctx := ctxowner.WithID(bg, ""); ctx != bg {
		t.Fatal("WithID with an empty id must return ctx unchanged")
	}
	if _, ok := ctxowner.From(bg); ok {
		t.Fatal("a plain context carries no owner")
	}
	var none context.Context // nil, which From tolerates
	if _, ok := ctxowner.From(none); ok {
		t.Fatal("a nil context carries no owner")
	}
	ctx := ctxowner.WithID(bg, "42")
	if id, ok := ctxowner.From(ctx); !ok || id != "42" {
		t.Fatalf("From = %q, %v", id, ok)
	}
	// A context owner never collides with goroutine 42.
	if ctxowner.Of(ctx) == "42" {
		t.Fatal("context owner collides with a goroutine owner")
	}
}

func TestGoroutineOwners(t *testing.T) {
	here := ctxowner.Of(context.Background())
	if _, err := strconv.ParseUint(here, 10, 64); err != nil || here == "0" {
		t.Fatalf("goroutine owner %q is not a goroutine number", here)
	}
	if again := ctxowner.Of(context.Background()); again != here {
		t.Fatalf("same goroutine, different owners %q and %q", here, again)
	}
	other := make(chan string)
	go func() { other <- ctxowner.Of(context.Background()) }()
	if o := <-other; o == here {
		t.Fatal("two goroutines share an owner")
	}
}

// BenchmarkOfContextOwner measures the cost of a context owner.
func BenchmarkOfContextOwner(b *testing.B) {
	ctx := ctxowner.New(context.Background())
	b.ReportAllocs()
	for b.Loop() {
		ctxowner.Of(ctx)
	}
}

// BenchmarkOfGoroutineOwner measures the full cost of a goroutine owner id.
func BenchmarkOfGoroutineOwner(b *testing.B) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ctxowner.Of(ctx)
	}
}

func TestPin(t *testing.T) {
	ctx := context.Background()
	mine := ctxowner.Of(ctx)
	pinned := ctxowner.Pin(ctx)
	if got := ctxowner.Of(pinned); got != mine {
		t.Fatalf("Of(Pin(ctx)) = %q on the pinning goroutine, want %q", got, mine)
	}
	other := make(chan string)
	go func() { other <- ctxowner.Of(pinned) }()
	if got := <-other; got != mine {
		t.Fatalf("Of(Pin(ctx)) = %q on another goroutine, want the pinning goroutine's %q", got, mine)
	}
	if _, ok := ctxowner.From(pinned); ok {
		t.Fatal("a pinned goroutine owner must not be reported as a context owner")
	}

	owned := ctxowner.WithID(ctx, "7")
	if got := ctxowner.Of(ctxowner.Pin(owned)); got != "ctx:7" {
		t.Fatalf("Of(Pin(WithID 7)) = %q, want ctx:7", got)
	}
	if id, ok := ctxowner.From(ctxowner.Pin(owned)); !ok || id != "7" {
		t.Fatalf("From(Pin(WithID 7)) = %q, %v; want 7, true", id, ok)
	}
	if got := ctxowner.Of(ctxowner.WithID(pinned, "8")); got != "ctx:8" {
		t.Fatalf("a later WithID must override a pin; Of = %q", got)
	}
}

func TestMiddlewareGivesEachRequestItsOwner(t *testing.T) {
	owners := make(chan string, 3)
	h := ctxowner.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := ctxowner.From(r.Context())
		if !ok {
			t.Error("the request carries no owner")
		}
		// A goroutine the handler starts with the request's context is the
		// same owner.
		done := make(chan string)
		go func() { done <- ctxowner.Of(r.Context()) }()
		if got := <-done; got != ctxowner.Of(r.Context()) {
			t.Errorf("goroutine of the request: owner %q, want %q", got, ctxowner.Of(r.Context()))
		}
		owners <- id
	}))
	for range 2 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	a, b := <-owners, <-owners
	if a == b {
		t.Fatalf("two requests share owner %q", a)
	}
	// An owner attached further out is kept.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	h.ServeHTTP(httptest.NewRecorder(), req.WithContext(ctxowner.WithID(req.Context(), "outer")))
	if got := <-owners; got != "outer" {
		t.Fatalf("owner %q, want the outer one", got)
	}
}
