# Convenience targets; the tests need only `go test -race ./...`.
.PHONY: test demo bench bench-deps

test:
	go test -race ./...

demo:
	go run ./cmd/rlockctl demo

# Side by side with redsync, bsm/redislock, rueidislock and a naive lock
# (bench/ is its own module, so the library never depends on the peers).
# About 15 minutes; writes bench/results.md and bench/results.png.
# ARGS=--backends: beside the real Redisson (REDISSON_PROBE), MariaDB,
# ZooKeeper and etcd (make bench-deps first); about 25 minutes; writes
# bench/backends.md and bench/backends.png (docs/benchmarks.md).
bench:
	cd bench && go run . $(ARGS)

# The lock servers of `make bench ARGS=--backends` (bench/README.md), from
# Debian's packages; the bench starts its own on loopback, so the services
# the packages may have started are stopped again.
bench-deps:
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools mariadb-server zookeeperd etcd-server default-jdk-headless >/dev/null
	-service mariadb stop >/dev/null 2>&1
	-service zookeeper stop >/dev/null 2>&1
	-service etcd stop >/dev/null 2>&1
	-service redis-server stop >/dev/null 2>&1
