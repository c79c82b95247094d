package election

import (
	"context"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// resignedScript writes KEYS[1] as the record of a leader that resigned,
// written by this server: the next leader leads at once.
var resignedScript = redis.NewScript(serverLua + `
redis.call('set', KEYS[1], 'R ' .. ARGV[1] .. ' 0 0 spec:resigned ' .. server() .. '\n-')
return 1`)

// MarkResigned makes the leader key say, as this Redis process would have
// written it, that the last leader resigned: the specs' clean slate.
func MarkResigned(ctx context.Context, rdb redis.Scripter, key string) error {
	return resignedScript.Run(ctx, rdb, []string{key}, uuid.NewString()).Err()
}
