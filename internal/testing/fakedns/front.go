package fakedns

import (
	"net/http"
	"net/http/httptest"
	"sync"
)

// Front is what every cloud fake is made of besides its API: the API's HTTP (or HTTPS) server,
// and the DNS server answering from the fake's state, started on first use (Lazy). A fake embeds
// it, so that the fake's URL, Client and Close are the server's.
type Front struct {
	*httptest.Server
	dns *Lazy
}

// NewFront starts api on a loopback HTTP server, or HTTPS (httptest's certificate, trusted by
// Client) when tls is set, and prepares the DNS server of src, which it calls with mu (the
// fake's state lock) held.
func NewFront(api http.Handler, tls bool, mu sync.Locker, src Source) Front {
	f := Front{dns: NewLazy(func() ([]Zone, error) {
		mu.Lock()
		defer mu.Unlock()
		return src()
	})}
	if tls {
		f.Server = httptest.NewTLSServer(api)
	} else {
		f.Server = httptest.NewServer(api)
	}
	return f
}

// Close stops the API server and, if DNSAddr started it, the DNS server.
func (f Front) Close() {
	f.Server.Close()
	f.dns.Close()
}

// DNSAddr returns the host:port (127.0.0.1, UDP and TCP) of a DNS server answering
// authoritatively for the fake's zones from its current state, as the cloud's name servers would:
// the apex SOA and NS the fake created, every record set, NXDOMAIN and NODATA with the SOA,
// REFUSED outside every zone (the fake's documentation says which zones it serves). It starts on
// the first call, stops with Close, and panics if it cannot listen, as httptest.NewServer does.
func (f Front) DNSAddr() string { return f.dns.Addr() }
