package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"log"
	"math/big"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/saucerhq/saucer/aip"
	"github.com/saucerhq/saucer/internal/remote"
	"github.com/saucerhq/saucer/server"
)

// testPKI makes a CA and a certificate for 127.0.0.1 signed by it.
func testPKI(t *testing.T) (serverCert tls.Certificate, roots *x509.CertPool) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "saucer test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	roots.AddCert(ca)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, roots
}

// TestTLS: over wss:// a device that trusts the server's CA registers and
// runs a task; a client without that CA is refused by its own TLS check.
func TestTLS(t *testing.T) {
	cert, roots := testPKI(t)
	s, err := server.New(server.Options{Token: token, NewSession: rounds([]string{"count"}), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(s.Handler())
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	hs.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below is expected
	hs.StartTLS()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx, "test over")
		hs.Close()
	})
	url := "wss" + strings.TrimPrefix(hs.URL, "https") + "/ws"

	if _, _, err := aip.Dial(context.Background(), url+"?token="+token, aip.DialOptions{}); err == nil ||
		!strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the CA connected or failed otherwise: %v", err)
	}

	// The device client without the CA stops at once, saying what to do,
	// rather than retrying a certificate forever.
	untrusted, err := remote.New(newFakeDevice(), remote.Options{URL: url, Token: token, ClientID: "untrusting", Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithTimeout(context.Background(), 20*time.Second)
	defer stop()
	if err := untrusted.Run(runCtx); err == nil || runCtx.Err() != nil || !strings.Contains(err.Error(), "certificate is not trusted") ||
		!strings.Contains(err.Error(), "--ca-cert") {
		t.Errorf("an untrusted certificate: %v", err)
	}

	dev := newFakeDevice()
	c := connect(t, url, "secure", dev, func(o *remote.Options) { o.TLS = &tls.Config{RootCAs: roots} })
	end, err := c.StartTask(context.Background(), "over TLS", "tls")
	if err != nil || end.Status != aip.StatusCompleted {
		t.Fatalf("task over wss: %+v %v", end, err)
	}
}
