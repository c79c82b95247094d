// Package highwayhash computes HighwayHash-128 (Alakuijala, Cox, Wassenberg,
// "Fast keyed hash/pseudo-random function using SIMD multiply and permute",
// 2016) in portable Go, as Redisson computes it in org.redisson.misc.Hash:
// Redisson's RedissonFasterMultiLock names each locked value's hash field by
// the 128-bit HighwayHash of the value's encoded bytes, under a fixed key.
// It holds no state and does no I/O.
package highwayhash

import (
	"encoding/base64"
	"encoding/binary"
	"math/bits"
)

// RedissonKey is the key of Redisson's org.redisson.misc.Hash.
var RedissonKey = [4]uint64{0x9e3779b97f4a7c15, 0xf39cc0605cedc834, 0x1082276bf3a27251, 0xf86c6a11d0c18e95}

// The initial multipliers of the algorithm (hexadecimal digits of pi).
var (
	init0 = [4]uint64{0xdbe6d5d5fe4cce2f, 0xa4093822299f31d0, 0x13198a2e03707344, 0x243f6a8885a308d3}
	init1 = [4]uint64{0x3bd39e10cb0ef593, 0xc0acf169b5f18a8c, 0xbe5466cf34e90c6c, 0x452821e638d01377}
)

// state is the hash's four lanes of two accumulators and two multipliers.
type state struct {
	v0, v1, mul0, mul1 [4]uint64
}

func newState(key [4]uint64) *state {
	s := &state{mul0: init0, mul1: init1}
	for i := range 4 {
		s.v0[i] = s.mul0[i] ^ key[i]
		s.v1[i] = s.mul1[i] ^ bits.RotateLeft64(key[i], 32)
	}
	return s
}

// update mixes one 32-byte packet, read as four little-endian words.
func (s *state) update(a [4]uint64) {
	for i := range 4 {
		s.v1[i] += s.mul0[i] + a[i]
		s.mul0[i] ^= (s.v1[i] & 0xffffffff) * (s.v0[i] >> 32)
		s.v0[i] += s.mul1[i]
		s.mul1[i] ^= (s.v0[i] & 0xffffffff) * (s.v1[i] >> 32)
	}
	s.v0[0] += zipperLow(s.v1[1], s.v1[0])
	s.v0[1] += zipperHigh(s.v1[1], s.v1[0])
	s.v0[2] += zipperLow(s.v1[3], s.v1[2])
	s.v0[3] += zipperHigh(s.v1[3], s.v1[2])
	s.v1[0] += zipperLow(s.v0[1], s.v0[0])
	s.v1[1] += zipperHigh(s.v0[1], s.v0[0])
	s.v1[2] += zipperLow(s.v0[3], s.v0[2])
	s.v1[3] += zipperHigh(s.v0[3], s.v0[2])
}

// zipperLow and zipperHigh are the two halves of the algorithm's byte
// shuffle ("zipper merge") of a 128-bit value given as its high and low
// words: each output byte comes from a fixed byte of the input, so that
// the multiplications' well-mixed middle bytes reach every position.
func zipperLow(hi, lo uint64) uint64 {
	return (((lo & 0xff000000) | (hi & 0xff00000000)) >> 24) |
		(((lo & 0xff0000000000) | (hi & 0xff000000000000)) >> 16) |
		(lo & 0xff0000) | ((lo & 0xff00) << 32) |
		((hi & 0xff00000000000000) >> 8) | (lo << 56)
}

func zipperHigh(hi, lo uint64) uint64 {
	return (((hi & 0xff000000) | (lo & 0xff00000000)) >> 24) |
		(hi & 0xff0000) | ((hi & 0xff0000000000) >> 16) |
		((hi & 0xff00) << 24) | ((lo & 0xff000000000000) >> 8) |
		((hi & 0xff) << 48) | (lo & 0xff00000000000000)
}

func packet(b []byte) [4]uint64 {
	return [4]uint64{
		binary.LittleEndian.Uint64(b[0:]), binary.LittleEndian.Uint64(b[8:]),
		binary.LittleEndian.Uint64(b[16:]), binary.LittleEndian.Uint64(b[24:]),
	}
}

// remainder mixes the last 1 to 31 bytes: the length is added to v0, v1's
// 32-bit halves are rotated by it, and the bytes are placed in a zeroed
// packet as the reference implementation places them.
func (s *state) remainder(b []byte) {
	n := len(b)
	for i := range 4 {
		s.v0[i] += uint64(n)<<32 + uint64(n)
		lo := bits.RotateLeft32(uint32(s.v1[i]), n)
		hi := bits.RotateLeft32(uint32(s.v1[i]>>32), n)
		s.v1[i] = uint64(hi)<<32 | uint64(lo)
	}
	var p [32]byte
	whole := n &^ 3
	copy(p[:], b[:whole])
	if n&16 != 0 {
		// The last four bytes of the input go to the end of the packet.
		copy(p[28:], b[n-4:])
	} else if rest := n & 3; rest != 0 {
		p[16] = b[whole]
		p[17] = b[whole+rest>>1]
		p[18] = b[whole+rest-1]
	}
	s.update(packet(p[:]))
}

// permuteAndUpdate is one finalization round: v0's words, swapped in pairs
// and with their halves exchanged, are mixed in as a packet.
func (s *state) permuteAndUpdate() {
	s.update([4]uint64{
		bits.RotateLeft64(s.v0[2], 32), bits.RotateLeft64(s.v0[3], 32),
		bits.RotateLeft64(s.v0[0], 32), bits.RotateLeft64(s.v0[1], 32),
	})
}

// Sum128 returns the 128-bit HighwayHash of data under key, as two words
// (Redisson's hash128: long[2]).
func Sum128(key [4]uint64, data []byte) [2]uint64 {
	s := newState(key)
	for len(data) >= 32 {
		s.update(packet(data))
		data = data[32:]
	}
	if len(data) > 0 {
		s.remainder(data)
	}
	for range 6 {
		s.permuteAndUpdate()
	}
	return [2]uint64{
		s.v0[0] + s.mul0[0] + s.v1[2] + s.mul1[2],
		s.v0[1] + s.mul0[1] + s.v1[3] + s.mul1[3],
	}
}

// RedissonBase64 returns what Redisson's Hash.hash128toBase64 returns for
// data: the 128-bit hash under RedissonKey, its two words big-endian, in
// standard base64 without the trailing "==" (22 characters).
func RedissonBase64(data []byte) string {
	h := Sum128(RedissonKey, data)
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:], h[0])
	binary.BigEndian.PutUint64(b[8:], h[1])
	return base64.RawStdEncoding.EncodeToString(b[:])
}
