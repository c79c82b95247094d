// Package goredisson is the root of a Go port of Redisson's distributed
// locks, wire-compatible with Redisson: a Java service on Redisson and a Go
// service on goredisson exclude each other on the same lock name.
//
// The locks live in package rlock; owners (who holds a reentrant lock) in
// ctxowner; the shared unlock subscription in pubsub; lease renewal in
// watchdog. This package holds no code: its tests specify the public
// behaviour against real redis-server processes (see README.md).
package goredisson
