package inspect_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/inspect"
)

// Bad input is refused before any command, with a sentinel error.
func TestLockRefusesBadInput(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	cases := []struct {
		what string
		ctx  context.Context
		rdb  redis.UniversalClient
		name string
	}{
		{"nil client", context.Background(), nil, "x"},
		{"empty name", context.Background(), rdb, ""},
		{"nil context", nil, rdb, "x"},
	}
	for _, c := range cases {
		info, err := inspect.Lock(c.ctx, c.rdb, c.name)
		if !errors.Is(err, inspect.ErrInvalidArgument) || info != nil {
			t.Errorf("%s: got (%v, %v), want (nil, ErrInvalidArgument)", c.what, info, err)
		}
	}
}
