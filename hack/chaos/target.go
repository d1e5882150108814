package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// target is one member's target of one family: an HTTP server answering 200 to every GET
// (the HTTP and TCP health checks both pass) that the schedule stops and starts again.
type target struct {
	addr string // host:port
	mu   sync.Mutex
	srv  *http.Server
}

// up listens and serves (nothing when it already does).
func (t *target) up() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.srv != nil {
		return nil
	}
	ln, err := net.Listen("tcp", t.addr)
	if err != nil {
		return fmt.Errorf("target %s: %w", t.addr, err)
	}
	t.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})}
	srv := t.srv
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Printf("chaos: target %s: %v\n", t.addr, err)
		}
	}()
	return nil
}

// down closes the listener and every connection: a probe's connection is refused.
func (t *target) down() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.srv != nil {
		_ = t.srv.Close()
		t.srv = nil
	}
}
