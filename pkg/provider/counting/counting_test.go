package counting_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/counting"
)

func TestCode(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("route53 ChangeResourceRecordSets: %w", err) }
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, counting.CodeOK},
		{wrap(&provider.ThrottledError{}), counting.CodeThrottled},
		{wrap(provider.ErrThrottled), counting.CodeThrottled},
		{wrap(provider.ErrConflict), counting.CodeConflict},
		{wrap(provider.ErrZoneNotFound), counting.CodeZoneNotFound},
		{wrap(provider.ErrZoneConflict), counting.CodeZoneConflict},
		{wrap(provider.ErrInvalidCredentials), counting.CodeInvalidCredentials},
		{wrap(provider.ErrInvalidChange), counting.CodeInvalidChange},
		{wrap(provider.ErrNotCapable), counting.CodeNotCapable},
		{wrap(context.DeadlineExceeded), counting.CodeTimeout},
		{wrap(context.Canceled), counting.CodeCanceled},
		{errors.New("connection reset by peer"), counting.CodeError},
	} {
		if got := counting.Code(tc.err); got != tc.want {
			t.Errorf("Code(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
