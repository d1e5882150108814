// Command statusd is the HTTP backend of the kind health scenarios (e2e/kind_health_test.go):
// a target that stays Ready in Kubernetes while its health-check path answers whatever status
// the test sets. It holds no state but that status, in memory (a restart answers 200 again).
// The kind recipe (hack/kind/lib.sh) packs it FROM scratch beside dnsq, in the dnsq image, so
// that a cluster that cannot pull images can run it.
//
//	statusd [-addr :8080]
//
// It serves:
//
//	GET  /healthz  the status set (200 at start), body "status <code>"; the path the Gslb probes
//	GET  /readyz   200 always: the Pod's readiness, which the test keeps up
//	PUT  /status   sets the status /healthz answers: the body is the code, 100 to 599 ("503");
//	               204 when set, 400 on another body
//	GET  /status   the status set, as its code
//
// Any other path is 404, any other method on these paths 405. Exit status: 1 when it cannot
// listen, 2 on bad usage.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", ":8080", "address to listen on, host:port")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: statusd [-addr :8080]")
		os.Exit(2)
	}
	srv := &http.Server{Addr: *addr, Handler: newHandler(), ReadHeaderTimeout: 5 * time.Second}
	log.Printf("statusd: listening on %s", *addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Printf("statusd: %v", err)
		os.Exit(1)
	}
}

// handler serves the paths above; status is the code /healthz answers.
type handler struct {
	status atomic.Int32
}

func newHandler() *handler {
	h := &handler{}
	h.status.Store(http.StatusOK)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/healthz" && r.Method == http.MethodGet:
		code := int(h.status.Load())
		w.WriteHeader(code)
		fmt.Fprintf(w, "status %d\n", code)
	case r.URL.Path == "/readyz" && r.Method == http.MethodGet:
		fmt.Fprintln(w, "ok")
	case r.URL.Path == "/status" && r.Method == http.MethodGet:
		fmt.Fprintln(w, h.status.Load())
	case r.URL.Path == "/status" && r.Method == http.MethodPut:
		body, err := io.ReadAll(io.LimitReader(r.Body, 16))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		code, err := strconv.Atoi(strings.TrimSpace(string(body)))
		if err != nil || code < 100 || code > 599 {
			http.Error(w, fmt.Sprintf("want a status code from 100 to 599, got %q", body), http.StatusBadRequest)
			return
		}
		h.status.Store(int32(code))
		log.Printf("statusd: /healthz answers %d from now on", code)
		w.WriteHeader(http.StatusNoContent)
	case r.URL.Path == "/healthz" || r.URL.Path == "/readyz" || r.URL.Path == "/status":
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	default:
		http.NotFound(w, r)
	}
}
