//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd || solaris || illumos)

package inline

import "errors"

// canPeek: go-redis checks no pooled connection here (its dummy
// connCheck), so a connection the server closed could not be found before
// a direct call, and a dead one would not be dropped by go-redis: the lane
// keeps no connection and every inline call goes through go-redis.
const canPeek = false

// peek is never reached here (Adopt keeps no connection).
func (c *conn) peek() error { return errors.New("inline: no connection check on this platform") }
