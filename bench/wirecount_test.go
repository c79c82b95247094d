package main

import "testing"

// TestRespWriteParser counts commands split across writes at every byte,
// and tells set-up commands from the library's.
func TestRespWriteParser(t *testing.T) {
	stream := "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n" +
		"*4\r\n$7\r\nevalsha\r\n$40\r\n0123456789012345678901234567890123456789\r\n$1\r\n1\r\n$3\r\nkey\r\n" +
		"*1\r\n$4\r\nPING\r\n" +
		"*3\r\n$6\r\nclient\r\n$7\r\nsetinfo\r\n$0\r\n\r\n"
	for cut := 0; cut <= len(stream); cut++ {
		var p respWriteParser
		c1, s1 := p.feed([]byte(stream[:cut]))
		c2, s2 := p.feed([]byte(stream[cut:]))
		if c1+c2 != 2 || s1+s2 != 2 {
			t.Fatalf("cut at %d: %d commands, %d set-up; want 2 and 2", cut, c1+c2, s1+s2)
		}
	}
}
