package oauthtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// MetadataPath is where a MetadataHost serves its document.
const MetadataPath = "/oauth/client.json"

// MetadataHost serves one public client's Client ID Metadata Document
// over HTTPS on loopback (its certificate: Certificate()), with
// Cache-Control: max-age=3600, at URL+MetadataPath (ClientID). Until
// SetRedirect gives it the client's redirect URI it answers 404.
type MetadataHost struct {
	*httptest.Server
	name     string
	mu       sync.Mutex
	redirect string
	n        int
}

// NewMetadataHost serves the document of a client named name until t
// ends.
func NewMetadataHost(t testing.TB, name string) *MetadataHost {
	h := &MetadataHost{name: name}
	h.Server = httptest.NewTLSServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	return h
}

func (h *MetadataHost) serve(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.n++
	redirect := h.redirect
	h.mu.Unlock()
	if r.URL.Path != MetadataPath || redirect == "" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=3600")
	json.NewEncoder(w).Encode(map[string]any{"client_id": h.ClientID(), "client_name": h.name, //nolint:errcheck // the fetcher says
		"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"}})
}

// ClientID is the client's id: its document's URL.
func (h *MetadataHost) ClientID() string { return h.URL + MetadataPath }

// SetRedirect sets the one redirect URI the document lists.
func (h *MetadataHost) SetRedirect(r string) { h.mu.Lock(); h.redirect = r; h.mu.Unlock() }

// Fetches is how many requests the host has had.
func (h *MetadataHost) Fetches() int { h.mu.Lock(); defer h.mu.Unlock(); return h.n }

// LoopbackCert is a self-signed certificate (its own CA) for 127.0.0.1,
// valid for an hour either side of now, and its PEM.
func LoopbackCert(t testing.TB) (tls.Certificate, []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
