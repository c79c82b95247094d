// Package inspectaux lets package rlock read a lock whose fair queue and
// timeouts are under another name than the lock's key (Redisson before
// 3.52 under a NameMapper keeps them under the unmapped name) without a
// public API in package inspect: inspect sets Lock when it is loaded.
package inspectaux

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Lock is inspect.Lock with the fair queue and timeouts read under aux; it
// returns an *inspect.Info.
var Lock func(ctx context.Context, rdb redis.UniversalClient, name, aux string) (any, error)
