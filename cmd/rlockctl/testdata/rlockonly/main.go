// Command rlockonly imports only package rlock: the rlockctl suite builds
// it and checks that none of rlockctl's own dependencies are linked in.
package main

import (
	"fmt"

	"github.com/goredisson/goredisson/rlock"
)

func main() { fmt.Println(rlock.ErrNotHeld) }
