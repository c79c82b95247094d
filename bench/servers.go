package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/goredisson/goredisson/internal/testkit/redistest"
)

// servers are the addresses of the lock servers a run measures against.
// An empty address means the server is not there (its rows are skipped).
type servers struct {
	Redis string // host:port
	MySQL string // go-sql-driver/mysql DSN of database "bench"
	ZK    string // host:port
	Etcd  string // host:port
}

// server is a lock server the bench started on loopback: one process in a
// temporary directory of its own, stopped by pid. Stop, Kill and Start
// restart it on the same port with the same data.
type server interface {
	Stop() error  // SIGTERM, wait for the exit
	Kill() error  // SIGKILL, wait for the exit
	Start() error // start again, wait until it answers
	Close() error // stop and remove its directory
	Pid() int
}

// proc is a server process started from its Debian package's binary.
type proc struct {
	name  string
	dir   string // temporary directory, removed by Close
	argv  []string
	ready func(ctx context.Context) error // answers once the server serves

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	out  bytes.Buffer
}

func (p *proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Start starts the process and waits up to 60 s until ready answers.
func (p *proc) Start() error {
	if p.Pid() != 0 {
		return fmt.Errorf("%s: already running", p.name)
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = p.dir
	p.mu.Lock()
	p.out.Reset()
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	p.mu.Unlock()
	cmd.SysProcAttr = redistest.ChildAttr() // killed with the bench, out of its process group
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		if p.cmd == cmd {
			p.cmd = nil
		}
		p.mu.Unlock()
		close(done)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := p.ready(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			p.mu.Lock()
			out := p.out.String()
			p.mu.Unlock()
			return fmt.Errorf("%s exited at start: %s", p.name, lastLines(out, 8))
		default:
		}
		if time.Now().After(deadline) {
			_ = p.Kill()
			return fmt.Errorf("%s did not answer within 60 s: %v", p.name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) Stop() error { return p.signal(syscall.SIGTERM) }
func (p *proc) Kill() error { return p.signal(syscall.SIGKILL) }

// signal sends sig and waits for the exit (SIGKILL after 30 s).
func (p *proc) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	return nil
}

func (p *proc) Close() error {
	err := p.Stop()
	if rmErr := os.RemoveAll(p.dir); err == nil {
		err = rmErr
	}
	return err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// redisServer wraps a redistest.Server as a server.
type redisServer struct{ *redistest.Server }

// startRedis starts a private redis-server. Persistence is configured as
// Debian's redis.conf ships it (RDB save points, no AOF), so that a
// graceful restart (SIGTERM: the server saves on shutdown) keeps the keys
// and a crash (SIGKILL) loses what changed since the last save.
func startRedis() (*redisServer, error) {
	s, err := redistest.Start(redistest.WithArgs("--save", "3600 1 300 100 60 10000", "--appendonly", "no"))
	if err != nil {
		return nil, err
	}
	return &redisServer{s}, nil
}

// --- MariaDB

// startMariaDB initialises a data directory with mariadb-install-db and
// starts mariadbd from Debian's mariadb-server on a free loopback port,
// with Debian's InnoDB durability defaults (innodb_flush_log_at_trx_commit
// 1); it creates database bench with the lock tables.
func startMariaDB() (*proc, string, error) {
	mysqld, err := lookBin("mariadbd", "/usr/sbin/mariadbd")
	if err != nil {
		return nil, "", err
	}
	install, err := lookBin("mariadb-install-db", "/usr/bin/mariadb-install-db")
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "bench-mariadb-")
	if err != nil {
		return nil, "", err
	}
	data := filepath.Join(dir, "data")
	if out, err := exec.Command(install, "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", fmt.Errorf("mariadb-install-db: %w: %s", err, lastLines(string(out), 5))
	}
	port, err := redistest.FreePort()
	if err != nil {
		return nil, "", err
	}
	root := fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port)
	p := &proc{name: "mariadbd", dir: dir, argv: []string{mysqld, "--no-defaults",
		"--datadir=" + data, "--socket=" + filepath.Join(dir, "sock"), "--pid-file=" + filepath.Join(dir, "pid"),
		"--log-error=" + filepath.Join(dir, "error.log"), "--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--user=root", "--skip-grant-tables", "--skip-name-resolve", "--max-connections=2000",
		"--innodb-buffer-pool-size=128M"}}
	p.ready = func(ctx context.Context) error {
		db, err := sql.Open("mysql", root)
		if err != nil {
			return err
		}
		defer db.Close()
		return db.PingContext(ctx)
	}
	if err := p.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", err
	}
	db, err := sql.Open("mysql", root)
	if err != nil {
		_ = p.Close()
		return nil, "", err
	}
	defer db.Close()
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS bench",
		// The lock table: a unique key per lock name; INSERT takes, DELETE releases.
		"CREATE TABLE IF NOT EXISTS bench.locks (name VARCHAR(191) PRIMARY KEY, owner VARCHAR(64) NOT NULL, taken TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)) ENGINE=InnoDB",
		// One row per lock name, locked with SELECT ... FOR UPDATE in a transaction.
		"CREATE TABLE IF NOT EXISTS bench.lockrows (name VARCHAR(191) PRIMARY KEY) ENGINE=InnoDB",
	} {
		if _, err := db.Exec(q); err != nil {
			_ = p.Close()
			return nil, "", fmt.Errorf("mariadb: %s: %w", q, err)
		}
	}
	return p, root + "bench?interpolateParams=true", nil
}

// --- ZooKeeper

// startZooKeeper starts a standalone ZooKeeper from Debian's zookeeper
// package (ZooKeeperServerMain, its jar and the jars its manifest names)
// on a free loopback port, tickTime 2 s as Debian's zoo.cfg, so session
// timeouts of 4-40 s are allowed.
func startZooKeeper() (*proc, string, error) {
	jar := "/usr/share/java/zookeeper.jar"
	if _, err := os.Stat(jar); err != nil {
		return nil, "", fmt.Errorf("ZooKeeper not installed (%s missing; apt-get install zookeeperd, or make bench-deps)", jar)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, "", fmt.Errorf("java not installed: %w", err)
	}
	dir, err := os.MkdirTemp("", "bench-zookeeper-")
	if err != nil {
		return nil, "", err
	}
	port, err := redistest.FreePort()
	if err != nil {
		return nil, "", err
	}
	cfg := fmt.Sprintf("tickTime=2000\ndataDir=%s\nclientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\nmaxClientCnxns=0\n",
		filepath.Join(dir, "data"), port)
	if err := os.WriteFile(filepath.Join(dir, "zoo.cfg"), []byte(cfg), 0o644); err != nil {
		return nil, "", err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	p := &proc{name: "zookeeper", dir: dir, argv: []string{java, "-Xmx512m", "-cp", "/etc/zookeeper/conf:" + jar,
		"org.apache.zookeeper.server.ZooKeeperServerMain", filepath.Join(dir, "zoo.cfg")}}
	p.ready = func(ctx context.Context) error {
		c, ev, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogger(nopLogger{}))
		if err != nil {
			return err
		}
		defer c.Close()
		for {
			select {
			case e := <-ev:
				if e.State == zk.StateHasSession {
					return nil
				}
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	if err := p.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", err
	}
	return p, addr, nil
}

// nopLogger silences go-zookeeper's connection log.
type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// --- etcd

// startEtcd starts a one-member etcd from Debian's etcd-server on free
// loopback ports.
func startEtcd() (*proc, string, error) {
	bin, err := lookBin("etcd", "/usr/bin/etcd")
	if err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "bench-etcd-")
	if err != nil {
		return nil, "", err
	}
	cport, err := redistest.FreePort()
	if err != nil {
		return nil, "", err
	}
	pport, err := redistest.FreePort()
	if err != nil {
		return nil, "", err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", cport)
	peer := fmt.Sprintf("http://127.0.0.1:%d", pport)
	p := &proc{name: "etcd", dir: dir, argv: []string{bin, "--name", "bench", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "bench=" + peer,
		"--log-level", "error", "--logger", "zap"}}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(cport))
	p.ready = func(ctx context.Context) error {
		c, err := newEtcdClient(addr)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Get(ctx, "bench-ready")
		return err
	}
	if err := p.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", err
	}
	return p, addr, nil
}

func newEtcdClient(addr string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 2 * time.Second, Logger: zapNop})
}

// lookBin finds a server binary on PATH or at its Debian path, or says
// how to install it.
func lookBin(name, debian string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if _, err := os.Stat(debian); err == nil {
		return debian, nil
	}
	return "", fmt.Errorf("%s not installed (make bench-deps installs mariadb-server, zookeeperd and etcd-server)", name)
}

// startedServers are the servers of a --backends run.
type startedServers struct {
	srv   servers
	redis *redisServer
	procs map[string]server // "mysql", "zk", "etcd"
	skips []string          // one line per server that could not start
}

// startServers starts every lock server; one that cannot start is skipped
// with a line saying why.
func startServers() (*startedServers, error) {
	s := &startedServers{procs: map[string]server{}}
	r, err := startRedis()
	if err != nil {
		return nil, err
	}
	s.redis, s.srv.Redis = r, r.Addr
	logf("redis-server on %s", r.Addr)
	type starter struct {
		key, what string
		start     func() (*proc, string, error)
		set       func(string)
	}
	for _, st := range []starter{
		{"mysql", "MariaDB", startMariaDB, func(a string) { s.srv.MySQL = a }},
		{"zk", "ZooKeeper", startZooKeeper, func(a string) { s.srv.ZK = a }},
		{"etcd", "etcd", startEtcd, func(a string) { s.srv.Etcd = a }},
	} {
		t := time.Now()
		p, addr, err := st.start()
		if err != nil {
			line := fmt.Sprintf("%s skipped: %v", st.what, err)
			s.skips = append(s.skips, line)
			logf("%s", line)
			continue
		}
		st.set(addr)
		s.procs[st.key] = p
		logf("%s on %s (started in %v)", st.what, strings.TrimPrefix(addr, "root@"), time.Since(t).Round(time.Millisecond))
	}
	return s, nil
}

func (s *startedServers) Close() {
	if s.redis != nil {
		_ = s.redis.Close()
	}
	for _, p := range s.procs {
		_ = p.Close()
	}
}
