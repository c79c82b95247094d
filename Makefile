# Convenience targets; the tests need only `go test -race ./...`.
.PHONY: test demo bench

test:
	go test -race ./...

demo:
	go run ./cmd/rlockctl demo

# Side by side with redsync, bsm/redislock, rueidislock and a naive lock
# (bench/ is its own module, so the library never depends on the peers).
# About 15 minutes; writes bench/results.md and bench/results.png.
bench:
	cd bench && go run . $(ARGS)
