package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goredisson/goredisson/internal/transport"
)

// maxCount bounds the permits of the semaphores: the scripts add them up
// as Lua numbers (doubles), which carry every integer of ±(2^53-1) exactly
// and no sum beyond it. A CountDownLatch's count is only counted down by
// Redis's DECR and is carried exactly up to math.MaxInt64.
const maxCount = 1<<53 - 1

// CheckCount refuses a count the scripts cannot carry exactly.
func CheckCount(n int) error {
	if int64(n) > maxCount || int64(n) < -maxCount {
		return fmt.Errorf("%w: %d permits: beyond ±(2^53-1), the integers Lua numbers carry exactly", ErrInvalidArgument, n)
	}
	return nil
}

// errCountRange starts a script's error reply for a sum of permits that
// would leave ±(2^53-1) (see semaphore.lua, permits.lua): nothing was
// written.
const errCountRange = "ERR goredisson: permits out of range"

// CountErr makes a script's out-of-range reply an ErrInvalidArgument.
func CountErr(err error) error {
	var re transport.ReplyError
	if errors.As(err, &re) && strings.HasPrefix(string(re), errCountRange) {
		return fmt.Errorf("%w: %s", ErrInvalidArgument, strings.TrimPrefix(string(re), "ERR goredisson: "))
	}
	return err
}
