package main_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/redis/go-redis/v9"

	"github.com/goredisson/goredisson/ctxowner"
	"github.com/goredisson/goredisson/internal/testkit/redistest"
	"github.com/goredisson/goredisson/rlock"
	"github.com/goredisson/goredisson/rlocktest"
)

// --redis takes host:port or a URL, as Redisson's and go-redis's
// configurations write it; flags go before the lock name; a bad flag is one
// line that points to --help.
var _ = Describe("rlockctl addresses and flags", func() {
	ctx := context.Background()

	// heldIn takes the lock name in database db of the server at addr for
	// an owner of a Client there, until cleanup.
	heldIn := func(addr string, db int, name string) *rlock.Client {
		GinkgoHelper()
		opt := srv.Client().Options()
		o := *opt
		o.Addr, o.DB = addr, db
		rdb := newRedis(&o)
		c, err := rlock.NewClient(rdb)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		Expect(c.NewLock(name).Lock(ctxowner.WithID(ctx, "url-owner"))).To(Succeed())
		DeferCleanup(func() { _, _ = c.NewLock(name).ForceUnlock(ctx) })
		return c
	}

	Describe("redis:// URLs", func() {
		It("reads a lock through redis://host:port, also from $REDIS_ADDR", func() {
			name := lockName()
			c := heldIn(srv.Addr(), 0, name)
			s := rlockctl("status", "--redis", "redis://"+srv.Addr(), name)
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(MatchRegexp(`holder:\s+` + c.ID() + `:ctx:url-owner`))

			s = start([]string{"REDIS_ADDR=redis://" + srv.Addr()}, "status", name)
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(MatchRegexp(`state:\s+locked`))
		})

		It("uses the URL's database", func() {
			name := lockName()
			heldIn(srv.Addr(), 3, name)
			s := rlockctl("status", "--redis", "redis://"+srv.Addr()+"/3", name)
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(MatchRegexp(`state:\s+locked`))
			s = rlockctl("status", "--redis", "redis://"+srv.Addr()+"/0", name)
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(MatchRegexp(`state:\s+not locked`), "database 0 has no such lock")
		})

		It("logs in with the URL's user and password, and never prints the password", func() {
			own := rlocktest.StartForSpec()
			admin := own.Client()
			DeferCleanup(admin.Close)
			Expect(admin.Do(ctx, "ACL", "SETUSER", "alice", "on", ">s3cret-pw", "~*", "&*", "+@all").Err()).To(Succeed())
			Expect(admin.Do(ctx, "ACL", "SETUSER", "default", "off").Err()).To(Succeed())
			name := lockName()

			s := process("run", "--redis", "redis://alice:s3cret-pw@"+own.Addr(), "--lock", name, "--wait", "0", "--", "true")
			exits(s, 0)

			s = rlockctl("status", "--redis", "redis://alice:wrong-pw@"+own.Addr(), name)
			exits(s, 69)
			Expect(string(s.Err.Contents())).To(ContainSubstring("cannot reach Redis at redis://alice:xxxxx@" + own.Addr()))
			Expect(string(s.Err.Contents())).NotTo(ContainSubstring("wrong-pw"))

			s = rlockctl("watch", "--redis", "redis://alice:s3cret-pw@"+own.Addr(), "--count", "0", "--for", "100ms", name)
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(ContainSubstring("watching " + name + " on redis://alice:xxxxx@" + own.Addr()))
			Expect(string(s.Out.Contents()) + string(s.Err.Contents())).NotTo(ContainSubstring("s3cret-pw"))

			s = rlockctl("demo", "--redis", "redis://alice:s3cret-pw@"+own.Addr(), "--buyers", "10", "--coupons", "4")
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(ContainSubstring("redis at " + own.Addr()))
		})

		It("speaks TLS with rediss://", func() {
			dir := GinkgoT().TempDir()
			cert, key := selfSigned(dir)
			port, err := redistest.FreePort()
			Expect(err).NotTo(HaveOccurred())
			tlsAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			own, err := rlocktest.Start("--tls-port", strconv.Itoa(port), "--tls-cert-file", cert, "--tls-key-file", key,
				"--tls-ca-cert-file", cert, "--tls-auth-clients", "no")
			if err != nil && strings.Contains(err.Error(), "tls") {
				Skip("this server has no TLS support: " + err.Error())
			}
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(own.Close)
			name := lockName()
			heldIn(own.Addr(), 0, name)

			s := rlockctl("status", "--redis", "rediss://"+tlsAddr+"?skip_verify=true", name)
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(MatchRegexp(`state:\s+locked`))

			s = rlockctl("status", "--redis", "rediss://"+tlsAddr, name)
			exits(s, 69)
			Expect(string(s.Err.Contents())).To(ContainSubstring("certificate"), "TLS verifies the server's certificate by default")

			s = rlockctl("status", "--redis", "redis://"+tlsAddr, name)
			exits(s, 69)
		})

		DescribeTable("refuses a bad URL with one line and exit 2",
			func(url, want string) {
				s := rlockctl("status", "--redis", url, "x")
				exits(s, 2)
				Expect(strings.TrimSpace(string(s.Err.Contents()))).To(And(ContainSubstring(want), Not(ContainSubstring("\n"))))
			},
			Entry("unknown scheme", "http://127.0.0.1:6379", `bad --redis URL "http://127.0.0.1:6379" (invalid URL scheme: http)`),
			Entry("unknown option", "redis://127.0.0.1:6379?bogus=1", "unexpected option: bogus"),
			Entry("bad database", "redis://127.0.0.1:6379/x", "invalid database number"),
			Entry("a cluster URL", "redis://127.0.0.1:7000?addr=127.0.0.1:7001", "a cluster URL (addr=...): give one node's address"),
			Entry("a password in a bad URL is not shown", "redis://u:topsecret@127.0.0.1:6379?bogus=1", `"redis://u:xxxxx@127.0.0.1:6379?bogus=1"`),
		)
	})

	Describe("flags", func() {
		It("says flags go before NAME when one comes after it", func() {
			for _, sub := range []string{"status", "watch", "unlock"} {
				s := rlockctl(sub, "x", "--redis", srv.Addr())
				exits(s, 2)
				Expect(string(s.Err.Contents())).To(Equal("rlockctl " + sub + `: flags go before NAME: rlockctl ` + sub + ` [flags] NAME; got "--redis" after "x"` + "\n"))
			}
			s := rlockctl("status", "x", "y")
			exits(s, 2)
			Expect(string(s.Err.Contents())).To(ContainSubstring(`one lock name expected, got ["x" "y"]`))
		})

		It("says flags go before CMD when --lock comes after the command", func() {
			s := rlockctl("run", "true", "--lock", "x")
			exits(s, 2)
			Expect(string(s.Err.Contents())).To(ContainSubstring("flags go before CMD: rlockctl run --lock NAME [flags] -- CMD ARGS..."))
			s = process("run", "--lock", lockName(), "--wait", "0", "--", "sh", "-c", `test "$1" = --lock`, "sh", "--lock")
			exits(s, 0)
		})

		It("says flags go after the subcommand", func() {
			s := rlockctl("--redis", srv.Addr(), "status", "x")
			exits(s, 2)
			Expect(string(s.Err.Contents())).To(Equal(`rlockctl: flags go after the subcommand, e.g. rlockctl status --redis ADDRESS NAME; got "--redis" first (see rlockctl --help)` + "\n"))
		})

		DescribeTable("answers a bad flag with one line that points to --help",
			func(want string, args ...string) {
				s := rlockctl(args...)
				exits(s, 2)
				Expect(string(s.Err.Contents())).To(Equal(want + "\n"))
				Expect(s.Out.Contents()).To(BeEmpty())
			},
			Entry("unknown flag", "rlockctl status: flag provided but not defined: -bogus (see rlockctl status --help)", "status", "--bogus", "x"),
			Entry("bad value", `rlockctl run: invalid value "soon" for flag -wait: want a duration (10s, 1m30s), seconds (2.5), 0 or forever (see rlockctl run --help)`,
				"run", "--lock", "x", "--wait", "soon", "--", "true"),
			Entry("flag without its value", "rlockctl watch: flag needs an argument: -redis (see rlockctl watch --help)", "watch", "--redis"),
			Entry("missing lock name", "rlockctl unlock: missing lock name (see rlockctl unlock --help)", "unlock", "--force"),
			Entry("unknown subcommand", `rlockctl: unknown subcommand "stauts" (see rlockctl --help)`, "stauts", "x"),
		)

		It("still prints the whole usage for --help, on stdout", func() {
			s := rlockctl("status", "--help")
			exits(s, 0)
			Expect(string(s.Out.Contents())).To(And(ContainSubstring("Usage: rlockctl status"), ContainSubstring("redis://[user:password@]host:port[/db]")))
			Expect(s.Err.Contents()).To(BeEmpty())
		})
	})
})

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key to
// dir and returns their paths.
func selfSigned(dir string) (certFile, keyFile string) {
	GinkgoHelper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	Expect(err).NotTo(HaveOccurred())
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "rlockctl test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	Expect(err).NotTo(HaveOccurred())
	kder, err := x509.MarshalECPrivateKey(key)
	Expect(err).NotTo(HaveOccurred())
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	Expect(os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)).To(Succeed())
	Expect(os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)).To(Succeed())
	return certFile, keyFile
}

// newRedis returns a go-redis client with opt, closed at cleanup.
func newRedis(opt *redis.Options) *redis.Client {
	rdb := redis.NewClient(opt)
	DeferCleanup(rdb.Close)
	return rdb
}
