package redistest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// WithTLS runs the server with TLS only (--port 0, --tls-port): a CA and a
// server certificate for 127.0.0.1 are made with the openssl command into
// the server's directory; clients need no certificate of their own. Addr is
// then the TLS port; Client, TLSConfig and URL ("rediss://...") connect
// over TLS.
func WithTLS() Option {
	return func(s *Server) { s.tls = true }
}

// TLSConfig returns a client TLS configuration that trusts the server's CA
// (nil for a server without TLS).
func (s *Server) TLSConfig() *tls.Config {
	if !s.tls {
		return nil
	}
	return &tls.Config{RootCAs: s.roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// URL returns the server's URL: rediss://127.0.0.1:port with TLS,
// redis://... without.
func (s *Server) URL() string {
	if s.tls {
		return "rediss://" + s.Addr
	}
	return "redis://" + s.Addr
}

// tlsArgs makes the certificates once and returns the server's TLS
// arguments.
func (s *Server) tlsArgs() ([]string, error) {
	ca, crt, key := filepath.Join(s.dir, "ca.crt"), filepath.Join(s.dir, "server.crt"), filepath.Join(s.dir, "server.key")
	if _, err := os.Stat(crt); err != nil {
		if err := makeCerts(s.dir); err != nil {
			return nil, err
		}
	}
	if s.roots == nil {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, err
		}
		s.roots = x509.NewCertPool()
		if !s.roots.AppendCertsFromPEM(pem) {
			return nil, errors.New("redistest: no certificate in ca.crt")
		}
	}
	return []string{
		"--port", "0",
		"--tls-port", strconv.Itoa(s.Port),
		"--tls-cert-file", crt,
		"--tls-key-file", key,
		"--tls-ca-cert-file", ca,
		"--tls-auth-clients", "no",
	}, nil
}

// makeCerts makes, in dir, a CA (ca.crt, ca.key) and a server certificate
// for 127.0.0.1 signed by it (server.crt, server.key), valid for a day.
func makeCerts(dir string) error {
	ext := filepath.Join(dir, "san.ext")
	if err := os.WriteFile(ext, []byte("subjectAltName=IP:127.0.0.1,DNS:localhost\n"), 0o600); err != nil {
		return err
	}
	ec := []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"}
	steps := [][]string{
		append(append([]string{"req", "-x509", "-new"}, ec...), "-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=redistest CA"),
		append(append([]string{"req", "-new"}, ec...), "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"),
		{"x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.crt", "-days", "1", "-extfile", "san.ext"},
	}
	for _, args := range steps {
		cmd := exec.Command("openssl", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("redistest: openssl %s: %w: %s", args[0], err, out)
		}
	}
	return nil
}
