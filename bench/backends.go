package main

import (
	"context"
	"crypto/sha1"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/go-zookeeper/zk"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// The rows of the other lock backends (MariaDB, ZooKeeper, etcd). Each
// opens one client per process, as the Redis rows do, and makes a mutex
// per owner.

var zapNop = zap.NewNop()

// errNotHeld is what a release that found the lock not held by its owner
// returns (the row, the key or the owner was gone).
var errNotHeld = errors.New("lock not held by this owner")

// backendLease is the lease or session timeout of a row in the
// performance workloads when the failure table does not set one.
const backendLease = 10 * time.Second

// leaseOf returns e.lease, or def when the run sets none.
func leaseOf(e env, def time.Duration) time.Duration {
	if e.lease > 0 {
		return e.lease
	}
	return def
}

// mysqlName fits a lock name into MariaDB's 64-character limit of
// GET_LOCK names (and our VARCHAR keys): a longer one is hashed.
func mysqlName(key string) string {
	if len(key) <= 64 {
		return key
	}
	sum := sha1.Sum([]byte(key))
	return key[:20] + ":" + hex.EncodeToString(sum[:])
}

func openMySQL(e env) (*sql.DB, error) {
	if e.srv.MySQL == "" {
		return nil, errors.New("no MariaDB server")
	}
	db, err := sql.Open("mysql", e.srv.MySQL)
	if err != nil {
		return nil, err
	}
	pool := max(e.pool, 8)
	db.SetMaxOpenConns(pool)
	db.SetMaxIdleConns(pool)
	return db, nil
}

// --- MariaDB GET_LOCK / RELEASE_LOCK

// getLockMutex holds a named lock of MariaDB's: GET_LOCK belongs to the
// connection (session) that took it, so the owner keeps one pool
// connection from lock to unlock; a closed connection releases it.
type getLockMutex struct {
	ctx  context.Context
	db   *sql.DB
	name string
	conn *sql.Conn
}

func (m *getLockMutex) lock() error {
	conn, err := m.db.Conn(m.ctx)
	if err != nil {
		return err
	}
	for {
		// Wait in slices of at most 10 s, so that an owner whose context
		// ended leaves the server within 10 s.
		wait := 10.0
		if dl, ok := m.ctx.Deadline(); ok {
			wait = min(wait, max(time.Until(dl).Seconds(), 0))
		}
		var got sql.NullInt64
		err := conn.QueryRowContext(m.ctx, "SELECT GET_LOCK(?, ?)", m.name, wait).Scan(&got)
		switch {
		case err != nil:
			_ = conn.Close()
			return err
		case got.Valid && got.Int64 == 1:
			m.conn = conn
			return nil
		case !got.Valid:
			_ = conn.Close()
			return fmt.Errorf("GET_LOCK(%q) returned NULL", m.name)
		}
		if err := m.ctx.Err(); err != nil {
			_ = conn.Close()
			return err
		}
	}
}

func (m *getLockMutex) unlock() error {
	if m.conn == nil {
		return errNotHeld
	}
	conn := m.conn
	m.conn = nil
	defer conn.Close()
	var released sql.NullInt64
	if err := conn.QueryRowContext(m.ctx, "SELECT RELEASE_LOCK(?)", m.name).Scan(&released); err != nil {
		return err
	}
	if !released.Valid || released.Int64 != 1 {
		return errNotHeld
	}
	return nil
}

func openGetLock(e env) (newMutexFunc, func(), error) {
	db, err := openMySQL(e)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, key string) mutex {
		return &getLockMutex{ctx: ctx, db: db, name: mysqlName(key)}
	}, func() { _ = db.Close() }, nil
}

// --- MariaDB lock table (unique key)

// tableMutex is the lock table: INSERT of the lock name into a table whose
// primary key it is takes the lock; a duplicate key means it is taken, and
// the owner polls every millisecond as the naive Redis lock does; DELETE
// of its own row releases. Nothing expires a row.
type tableMutex struct {
	ctx   context.Context
	db    *sql.DB
	name  string
	owner string
}

func (m *tableMutex) lock() error {
	for {
		_, err := m.db.ExecContext(m.ctx, "INSERT INTO locks (name, owner) VALUES (?, ?)", m.name, m.owner)
		// 1062: duplicate entry, the lock is taken. 1213: deadlock, which
		// InnoDB returns to some of the concurrent INSERTs of one key
		// while a DELETE of it runs; the INSERT was rolled back, so the
		// lock is as taken: poll again.
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1062 && me.Number != 1213 {
			return err
		}
		select {
		case <-time.After(time.Millisecond):
		case <-m.ctx.Done():
			return m.ctx.Err()
		}
	}
}

func (m *tableMutex) unlock() error {
	res, err := m.db.ExecContext(m.ctx, "DELETE FROM locks WHERE name = ? AND owner = ?", m.name, m.owner)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return errNotHeld
	}
	return nil
}

func openLockTable(e env) (newMutexFunc, func(), error) {
	db, err := openMySQL(e)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, key string) mutex {
		return &tableMutex{ctx: ctx, db: db, name: mysqlName(key), owner: "owner-" + strconv.FormatInt(ownerSeq.Add(1), 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	}, func() { _ = db.Close() }, nil
}

// --- MariaDB SELECT ... FOR UPDATE

// forUpdateMutex locks the lock name's row with SELECT ... FOR UPDATE in a
// transaction: waiters block in InnoDB's row-lock wait
// (innodb_lock_wait_timeout, 50 s, then they try again); COMMIT releases.
// The row is inserted once (INSERT IGNORE) before the first lock: a
// locking read of a missing row takes only a gap lock, which excludes
// nobody.
type forUpdateMutex struct {
	ctx     context.Context
	db      *sql.DB
	name    string
	tx      *sql.Tx
	ensured bool
}

func (m *forUpdateMutex) lock() error {
	if !m.ensured {
		if _, err := m.db.ExecContext(m.ctx, "INSERT IGNORE INTO lockrows (name) VALUES (?)", m.name); err != nil {
			return err
		}
		m.ensured = true
	}
	for {
		tx, err := m.db.BeginTx(m.ctx, nil)
		if err != nil {
			return err
		}
		var name string
		err = tx.QueryRowContext(m.ctx, "SELECT name FROM lockrows WHERE name = ? FOR UPDATE", m.name).Scan(&name)
		if err == nil {
			m.tx = tx
			return nil
		}
		_ = tx.Rollback()
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1205 || m.ctx.Err() != nil { // 1205: lock wait timeout
			return err
		}
	}
}

func (m *forUpdateMutex) unlock() error {
	if m.tx == nil {
		return errNotHeld
	}
	tx := m.tx
	m.tx = nil
	return tx.Commit()
}

func openForUpdate(e env) (newMutexFunc, func(), error) {
	db, err := openMySQL(e)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context, key string) mutex {
		return &forUpdateMutex{ctx: ctx, db: db, name: mysqlName(key)}
	}, func() { _ = db.Close() }, nil
}

// --- ZooKeeper

// zkMutex is ZooKeeper's lock recipe through go-zookeeper/zk's Lock: an
// ephemeral sequential znode under the lock's node; the lowest holds it,
// every other waiter watches its predecessor. zk.Lock takes no context: a
// lock call whose context ends returns at once, and if its znode is
// granted later it is released then.
type zkMutex struct {
	ctx  context.Context
	l    *zk.Lock
	lost <-chan struct{}
}

func (m *zkMutex) lock() error {
	done := make(chan error, 1)
	go func() { done <- m.l.Lock() }()
	select {
	case err := <-done:
		return err
	case <-m.ctx.Done():
		go func() {
			if <-done == nil {
				_ = m.l.Unlock()
			}
		}()
		return m.ctx.Err()
	}
}

func (m *zkMutex) unlock() error { return m.l.Unlock() }

// lostSignal is closed when the process's ZooKeeper session expired (its
// ephemeral znodes, the locks it held, are gone).
func (m *zkMutex) lostSignal() <-chan struct{} { return m.lost }

// zkPath turns a lock key into a znode path.
func zkPath(key string) string {
	sum := sha1.Sum([]byte(key))
	return "/bench-locks/" + hex.EncodeToString(sum[:12])
}

func openZooKeeper(e env) (newMutexFunc, func(), error) {
	if e.srv.ZK == "" {
		return nil, nil, errors.New("no ZooKeeper server")
	}
	conn, events, err := zk.Connect([]string{e.srv.ZK}, leaseOf(e, backendLease), zk.WithLogger(nopLogger{}))
	if err != nil {
		return nil, nil, err
	}
	expired := make(chan struct{})
	connected := make(chan struct{})
	go func() {
		var once, conOnce sync.Once
		for ev := range events {
			switch ev.State {
			case zk.StateHasSession:
				conOnce.Do(func() { close(connected) })
			case zk.StateExpired:
				once.Do(func() { close(expired) })
			}
		}
	}()
	select {
	case <-connected:
	case <-time.After(10 * time.Second):
		conn.Close()
		return nil, nil, errors.New("zookeeper: no session within 10 s")
	}
	return func(ctx context.Context, key string) mutex {
		return &zkMutex{ctx: ctx, l: zk.NewLock(conn, zkPath(key), zk.WorldACL(zk.PermAll)), lost: expired}
	}, conn.Close, nil
}

// --- etcd

// etcdMutex is etcd's client/v3/concurrency.Mutex. Its owner is a session
// (a lease kept alive by the client): two Mutexes of one session share one
// key, so both would "hold" the lock at once. Every owner therefore has a
// session of its own, granted when the owner is made.
type etcdMutex struct {
	ctx context.Context
	s   *concurrency.Session
	m   *concurrency.Mutex
	err error
}

func (m *etcdMutex) lock() error {
	if m.err != nil {
		return m.err
	}
	return m.m.Lock(m.ctx)
}

func (m *etcdMutex) unlock() error {
	if m.err != nil {
		return m.err
	}
	return m.m.Unlock(m.ctx)
}

// lostSignal is closed when the owner's session ended (its lease expired
// or could not be kept alive).
func (m *etcdMutex) lostSignal() <-chan struct{} {
	if m.s == nil {
		return nil
	}
	return m.s.Done()
}

func openEtcd(e env) (newMutexFunc, func(), error) {
	if e.srv.Etcd == "" {
		return nil, nil, errors.New("no etcd server")
	}
	cli, err := newEtcdClient(e.srv.Etcd)
	if err != nil {
		return nil, nil, err
	}
	ttl := int(leaseOf(e, backendLease) / time.Second)
	var mu sync.Mutex
	var sessions []*concurrency.Session
	return func(ctx context.Context, key string) mutex {
			s, err := concurrency.NewSession(cli, concurrency.WithTTL(ttl))
			if err != nil {
				return &etcdMutex{err: err}
			}
			mu.Lock()
			sessions = append(sessions, s)
			mu.Unlock()
			return &etcdMutex{ctx: ctx, s: s, m: concurrency.NewMutex(s, "/bench-locks/"+key)}
		}, func() {
			mu.Lock()
			defer mu.Unlock()
			var wg sync.WaitGroup
			for _, s := range sessions {
				wg.Go(func() { _ = s.Close() })
			}
			wg.Wait()
			_ = cli.Close()
		}, nil
}
