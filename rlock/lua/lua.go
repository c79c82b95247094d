// Package lua holds the Lua scripts that goredisson runs on Redis, one file
// each (lib/ holds the helpers a script includes with "--#include name");
// docs/layout.md describes the keys and messages they keep. The lock engine
// loads them from FS at start-up.
package lua

import "embed"

// FS is every script: <name>.lua and lib/<name>.lua.
//
//go:embed *.lua lib/*.lua
var FS embed.FS
