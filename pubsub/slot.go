package pubsub

import "github.com/goredisson/goredisson/internal/cluster"

// Slot returns the Redis Cluster hash slot of a key or shard channel name:
// CRC16 (XMODEM) of its hash tag (the text between the first "{" and the
// next "}", when not empty) or else of the whole name, modulo 16384, as the
// Redis Cluster specification defines it.
func Slot(name string) int { return cluster.Slot(name) }
