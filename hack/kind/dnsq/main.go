// Command dnsq asks one DNS server one question and prints the answer section, one record a
// line (miekg/dns's presentation format): a dig for images with nothing else in them. The kind
// recipe (hack/kind/dnsq-image.sh) packs it FROM scratch, so that a Pod on a cluster that
// cannot pull images can query the dns Service (docs/install.md, "Try it on kind").
//
//	dnsq [-tcp] [-timeout 2s] <server[:port]> <name> [type]
//
// The port defaults to 53 and the type to A. Exit status: 0 with an answer, 1 on an error or
// an rcode other than NOERROR, 2 on bad usage.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/miekg/dns"
)

func main() {
	tcp := flag.Bool("tcp", false, "query over TCP")
	timeout := flag.Duration("timeout", 2*time.Second, "timeout of the query")
	flag.Parse()
	if flag.NArg() < 2 || flag.NArg() > 3 {
		fmt.Fprintln(os.Stderr, "usage: dnsq [-tcp] [-timeout 2s] <server[:port]> <name> [type]")
		os.Exit(2)
	}
	server, name, qtype := flag.Arg(0), flag.Arg(1), "A"
	if flag.NArg() == 3 {
		qtype = strings.ToUpper(flag.Arg(2))
	}
	if _, _, err := net.SplitHostPort(server); err != nil {
		server = net.JoinHostPort(server, "53")
	}
	t, ok := dns.StringToType[qtype]
	if !ok {
		fmt.Fprintf(os.Stderr, "dnsq: unknown type %q\n", qtype)
		os.Exit(2)
	}
	if err := run(os.Stdout, server, name, t, *tcp, *timeout); err != nil {
		fmt.Fprintf(os.Stderr, "dnsq: %v\n", err)
		os.Exit(1)
	}
}

// run asks server for name's qtype records and writes each answer record to w, one a line. It
// fails on a network error (wrapped) and on an rcode other than NOERROR.
func run(w io.Writer, server, name string, qtype uint16, tcp bool, timeout time.Duration) error {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Timeout: timeout}
	if tcp {
		c.Net = "tcp"
	}
	r, _, err := c.Exchange(m, server)
	if err != nil {
		return fmt.Errorf("%s %s at %s: %w", name, dns.TypeToString[qtype], server, err)
	}
	if r.Rcode != dns.RcodeSuccess {
		return fmt.Errorf("%s %s at %s: %s", name, dns.TypeToString[qtype], server, dns.RcodeToString[r.Rcode])
	}
	for _, rr := range r.Answer {
		if _, err := fmt.Fprintln(w, rr.String()); err != nil {
			return err
		}
	}
	return nil
}
