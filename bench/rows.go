package main

import "fmt"

// Row names of the --backends run that the report refers to.
const (
	redissonName     = "Redisson RLock"
	redissonFairName = "Redisson FairLock"
	fairName         = "goredisson FairLock"
)

// otherBackends are the rows of the --backends run beyond the Redis
// libraries of allLibs: the real Redisson (Java), MariaDB, ZooKeeper and
// etcd.
var otherBackends = []lib{
	{name: redissonName, needs: "redisson", java: "lock",
		settings: "the real Redisson (Java 17, RedissonBench.java on the probe build): getLock, lock()/tryLock(wait, -1) with the watchdog (30 s), waiters woken by pub/sub; connection pool 64"},
	{name: redissonFairName, needs: "redisson", java: "fair",
		settings: "the real Redisson: getFairLock, the same calls"},
	{name: "MariaDB GET_LOCK", needs: "mysql", open: openGetLock,
		settings: "SELECT GET_LOCK(name, 10) on a pool connection kept by the owner until SELECT RELEASE_LOCK(name); waiters block in the server; freed when the connection closes"},
	{name: "MariaDB lock table", needs: "mysql", open: openLockTable,
		settings: "INSERT INTO locks (name, owner) (primary key name) takes, DELETE ... WHERE name AND owner releases; a duplicate key (or the deadlock error InnoDB gives some concurrent INSERTs of one key) is polled every 1 ms; no expiry"},
	{name: "MariaDB FOR UPDATE", needs: "mysql", open: openForUpdate,
		settings: "BEGIN; SELECT name FROM lockrows WHERE name = ? FOR UPDATE; ... COMMIT releases; waiters block in InnoDB's row-lock wait"},
	{name: "ZooKeeper lock", needs: "zk", open: openZooKeeper,
		settings: "go-zookeeper/zk Lock: ephemeral sequential znode, each waiter watches its predecessor; one session per process (timeout 10 s)"},
	{name: "etcd Mutex", needs: "etcd", open: openEtcd,
		settings: "client/v3/concurrency.Mutex; one session (lease, TTL 10 s) per owner, since two Mutexes of one session share its key"},
}

// backendRowOrder is the order of the rows of the --backends run (before
// the rotation of each burst): goredisson first, the reference of every
// ratio.
var backendRowOrder = []string{
	rlockName, fairName, redissonName, redissonFairName, redissonScriptsName,
	"redsync", "redsync tuned", "redislock", "redislock tuned", "rueidislock", rueidisTunedName, naiveName,
	"MariaDB GET_LOCK", "MariaDB lock table", "MariaDB FOR UPDATE", "ZooKeeper lock", "etcd Mutex",
}

// findAnyLib returns the row named name among every library and backend.
func findAnyLib(name string) (lib, error) {
	if l, err := findLib(name); err == nil {
		return l, nil
	}
	for _, l := range otherBackends {
		if l.name == name {
			return l, nil
		}
	}
	return lib{}, fmt.Errorf("unknown library %q", name)
}

// server returns the server a row needs: "redis" unless it says.
func (l lib) server() string {
	if l.needs == "" {
		return "redis"
	}
	return l.needs
}
