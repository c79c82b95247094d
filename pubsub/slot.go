package pubsub

import "strings"

// Slot returns the Redis Cluster hash slot of a key or shard channel name:
// CRC16 (XMODEM) of its hash tag (the text between the first "{" and the
// next "}", when not empty) or else of the whole name, modulo 16384, as the
// Redis Cluster specification defines it.
func Slot(name string) int {
	if i := strings.IndexByte(name, '{'); i >= 0 {
		if j := strings.IndexByte(name[i+1:], '}'); j > 0 {
			name = name[i+1 : i+1+j]
		}
	}
	return int(crc16(name) % 16384)
}

// crc16 is CRC-16/XMODEM: polynomial 0x1021, initial value 0, no
// reflection.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
