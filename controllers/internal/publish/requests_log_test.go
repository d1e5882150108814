package publish

import (
	"strings"
	"testing"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/mapfunctest"
)

func TestRequests_LogsAFailedListAndSkipsIt(t *testing.T) {
	c, ctx, logged := mapfunctest.FailingList(t)
	if got := Requests(ctx, c, &dnsv1.DNSEndpointList{}, nil); len(got) != 0 {
		t.Fatalf("Requests = %v, want none", got)
	}
	if len(*logged) != 1 || !strings.Contains((*logged)[0], "apiserver unavailable") {
		t.Fatalf("logged %q, want one error naming the List failure", *logged)
	}
}
