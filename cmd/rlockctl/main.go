// Command rlockctl runs, inspects and demonstrates goredisson locks from a
// shell.
//
//	rlockctl demo                                  the flash-sale demo (no Redis needed)
//	rlockctl run --lock NAME [--wait D] [--lease D] -- CMD ARGS...
//	                                               a distributed flock(1): waits for
//	                                               the lock until it is acquired, or
//	                                               up to --wait D (0: one attempt)
//	rlockctl list [PATTERN]                        locks, semaphores, latches matching PATTERN
//	rlockctl status NAME                           holders, hold counts, TTL, type, waiters
//	rlockctl unlock --force NAME                   delete a lock whoever holds it
//	rlockctl watch NAME                            print lock and unlock events
//
// Every subcommand takes --redis ADDRESS (default $REDIS_ADDR, else
// 127.0.0.1:6379; the demo starts its own Redis when none is given) and
// --help. ADDRESS is host:port, or a URL as Redisson's and go-redis's
// configurations write it: redis://[user:password@]host:port[/db] or
// rediss://... for TLS (go-redis's ParseURL; its query options such as
// dial_timeout apply too). Flags go before the lock name: rlockctl status
// --redis ADDRESS NAME.
//
// Exit codes:
//
//	0    success
//	1    failure: the demo's locked run went wrong, unlock --force found no lock, or an error
//	2    bad usage: unknown subcommand or flag, bad flag value or --redis address,
//	     missing lock name or command
//	69   Redis unreachable or not answering (EX_UNAVAILABLE)
//	75   run: the lock was not acquired within --wait (EX_TEMPFAIL)
//	77   run: the lock was lost while the command ran; the command was signalled
//	128+S list: stopped by signal S (SIGINT, SIGTERM); what it found is printed
//	N    run: the command's own exit status; 128+S when signal S killed it;
//	     126 when it could not be executed, 127 when it was not found
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/inspect"
	"github.com/goredisson/goredisson/rlock"
)

// Exit codes (documented above and in README.md).
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitUnavailable = 69
	exitNotAcquired = 75
	exitLost        = 77
)

// exitError carries an exit code and a message for the user.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, env *cli, args []string) error
}

var commands = map[string]command{
	"demo":   {"run the flash-sale demo: 200 buyers, 50 coupons, without and with a lock", runDemo},
	"list":   {"list the locks, semaphores and latches whose names match a pattern (SCAN)", runList},
	"run":    {"run a command while holding a lock (a distributed flock)", runRun},
	"status": {"show a lock's or synchronizer's kind, holders and their processes, counts, TTL, waiters", runStatus},
	"unlock": {"delete a lock whoever holds it (--force)", runUnlock},
	"watch":  {"print a lock's lock and unlock events as they happen", runWatch},
}

var order = []string{"demo", "list", "run", "status", "unlock", "watch"}

// cli is what subcommands share: where to read and write.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// quiet drops go-redis's internal log lines (dial retries and the like):
// rlockctl reports errors itself.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quiet{})
	os.Exit(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run runs rlockctl with args (what follows the program's name) and
// returns its exit code: main with the process's standard streams, the
// specs in their own process with buffers. A subcommand stops early when
// ctx ends, as it does at a signal it handles.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	env := &cli{stdin: stdin, stdout: stdout, stderr: stderr}
	return env.main(ctx, args)
}

func (env *cli) main(ctx context.Context, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		env.usage(env.stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		if strings.HasPrefix(args[0], "-") {
			fmt.Fprintf(env.stderr, "rlockctl: flags go after the subcommand, e.g. rlockctl status --redis ADDRESS NAME; got %q first (see rlockctl --help)\n", args[0])
		} else {
			fmt.Fprintf(env.stderr, "rlockctl: unknown subcommand %q (see rlockctl --help)\n", args[0])
		}
		return exitUsage
	}
	err := cmd.run(ctx, env, args[1:])
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(env.stderr, "rlockctl %s: %s\n", args[0], ee.msg)
		}
		return ee.code
	}
	fmt.Fprintf(env.stderr, "rlockctl %s: %s\n", args[0], plain(err))
	return exitFailure
}

// plain phrases err for a user. goredisson's errors read
// `goredisson: <operation> "<lock>": <cause>`, naming internal operations
// ("newclient", "trylock"); rlockctl says itself what it was doing, so
// only the cause is kept, without the "invalid argument: " prefix.
func plain(err error) string {
	msg := err.Error()
	var re *rlock.Error
	if errors.As(err, &re) && re.Err != nil {
		msg = strings.Replace(msg, re.Error(), plain(re.Err), 1)
	}
	return strings.TrimPrefix(msg, rlock.ErrInvalidArgument.Error()+": ")
}

func (env *cli) usage(w io.Writer) {
	fmt.Fprintln(w, "rlockctl: Redisson-compatible distributed locks from the shell (goredisson)")
	fmt.Fprintln(w, "\nUsage: rlockctl <subcommand> [flags] [args]")
	fmt.Fprintln(w, "\nSubcommands:")
	for _, name := range order {
		fmt.Fprintf(w, "  %-8s %s\n", name, commands[name].summary)
	}
	fmt.Fprintln(w, "\nRun 'rlockctl <subcommand> --help' for its flags. Exit codes: 0 ok, 1 failure,")
	fmt.Fprintln(w, "2 usage, 69 Redis unreachable, 75 lock not acquired in time, 77 lock lost;")
	fmt.Fprintln(w, "run returns the command's own status otherwise.")
}

// flags returns a flag set for a subcommand with the common --redis flag.
func (env *cli) flags(name, args, about string, redisDefault string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("rlockctl "+name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	addr := fs.String("redis", redisDefault, "Redis server `address`: host:port, or a URL redis://[user:password@]host:port[/db] (rediss:// for TLS)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: rlockctl %s %s\n\n%s\n\nFlags:\n", name, args, about)
		fs.PrintDefaults()
	}
	return fs, addr
}

// parse parses args, mapping bad usage to exit code 2 and --help to 0.
// Asked-for help prints the usage to stdout; a bad flag or flag value is
// one line that points to --help, not the whole usage.
func (env *cli) parse(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(env.stdout)
		fs.Usage()
		fs.SetOutput(out)
		return flag.ErrHelp
	}
	return fail(exitUsage, "%v (see %s --help)", err, fs.Name())
}

// defaultAddr is $REDIS_ADDR or Redis's default address.
func defaultAddr() string {
	if a := os.Getenv("REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// redisOptions turns a --redis address into go-redis options, telling bad
// usage (exit 2) from an unreachable server (exit 69, later): host:port with
// a numeric port, or a redis://, rediss:// or unix:// URL that go-redis's
// ParseURL accepts.
func redisOptions(addr string) (*redis.Options, error) {
	const want = "want host:port or redis://[user:password@]host:port[/db], e.g. 127.0.0.1:6379"
	if addr == "" {
		return nil, fail(exitUsage, "empty --redis address: %s", want)
	}
	if strings.Contains(addr, "://") {
		opt, err := redis.ParseURL(addr)
		if err != nil {
			msg := strings.TrimPrefix(err.Error(), "redis: ")
			if strings.Contains(msg, "unexpected option: addr") {
				msg = "a cluster URL (addr=...): give one node's address"
			}
			return nil, fail(exitUsage, "bad --redis URL %q (%s): %s", redact(addr), msg, want)
		}
		return opt, nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		if n, perr := strconv.Atoi(port); perr != nil || n < 1 || n > 65535 {
			err = fmt.Errorf("port %q is not a number from 1 to 65535", port)
		}
	}
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) {
			err = errors.New(ae.Err)
		}
		return nil, fail(exitUsage, "bad --redis address %q (%v): %s", addr, err, want)
	}
	return &redis.Options{Addr: addr}, nil
}

// redact returns a --redis address fit to print: a URL's password is
// replaced by xxxxx.
func redact(addr string) string {
	if u, err := url.Parse(addr); err == nil && u.User != nil {
		return u.Redacted()
	}
	return addr
}

// connect returns a go-redis client for addr that answered PING, and a
// goredisson Client on it; close both with the returned func. Bad usage
// (the address, the options) is reported before Redis is asked.
func connect(ctx context.Context, addr string, opts ...rlock.Option) (*redis.Client, *rlock.Client, func(), error) {
	ropt, err := redisOptions(addr)
	if err != nil {
		return nil, nil, nil, err
	}
	if ropt.DialTimeout == 0 {
		ropt.DialTimeout = 2 * time.Second
	}
	if ropt.MaxRetries == 0 {
		ropt.MaxRetries = -1
	}
	rdb := redis.NewClient(ropt)
	// Only run holds locks: the other subcommands' Clients do not register.
	c, err := rlock.NewClient(rdb, append([]rlock.Option{rlock.WithClientRegistry(false)}, opts...)...)
	if err != nil {
		_ = rdb.Close()
		return nil, nil, nil, fail(exitUsage, "%s", plain(err))
	}
	closeAll := func() { _ = c.Close(); _ = rdb.Close() }
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		closeAll()
		return nil, nil, nil, fail(exitUnavailable, "cannot reach Redis at %s: %v", redact(addr), err)
	}
	return rdb, c, closeAll, nil
}

// lockName returns the single positional lock name.
func lockName(fs *flag.FlagSet) (string, error) {
	switch {
	case fs.NArg() == 0 || fs.Arg(0) == "":
		return "", fail(exitUsage, "missing lock name (see %s --help)", fs.Name())
	case fs.NArg() > 1:
		if f := flagAfter(fs); f != "" {
			return "", fail(exitUsage, "flags go before NAME: %s [flags] NAME; got %q after %q", fs.Name(), f, fs.Arg(0))
		}
		return "", fail(exitUsage, "one lock name expected, got %q", fs.Args())
	}
	return fs.Arg(0), nil
}

// flagAfter returns the first argument left after the positional ones that
// looks like a flag (the flag package stops at the first non-flag), or "".
func flagAfter(fs *flag.FlagSet) string {
	for _, a := range fs.Args()[1:] {
		if a == "--" {
			return ""
		}
		if len(a) > 1 && a[0] == '-' {
			return a
		}
	}
	return ""
}

// parseNamed parses args of a subcommand that takes one lock name.
func (env *cli) parseNamed(fs *flag.FlagSet, args []string) (string, error) {
	if err := env.parse(fs, args); err != nil {
		return "", err
	}
	return lockName(fs)
}

// readLock connects to addr and reads the named lock; closeAll closes the
// connection.
func readLock(ctx context.Context, addr, name string) (rdb *redis.Client, c *rlock.Client, info *inspect.Info, closeAll func(), err error) {
	rdb, c, closeAll, err = connect(ctx, addr)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if info, err = inspect.Lock(ctx, rdb, name); err != nil {
		closeAll()
		return nil, nil, nil, nil, fail(exitUnavailable, "reading lock %s: %s", name, plain(err))
	}
	return rdb, c, info, closeAll, nil
}
