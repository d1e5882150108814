package google

import (
	"context"
	"time"
)

// listPages gathers every page of a Cloud DNS list call: fetch asks for the page at token
// (within its own timeout), items returns a page's items and the next page's token ("" after the
// last page); op names the call in errors (mapErr).
func listPages[R, T any](ctx context.Context, timeout time.Duration, op string,
	fetch func(ctx context.Context, token string) (R, error), items func(R) ([]T, string)) ([]T, error) {
	var all []T
	for token := ""; ; {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		r, err := fetch(cctx, token)
		cancel()
		if err != nil {
			return nil, mapErr(op, err)
		}
		page, next := items(r)
		all = append(all, page...)
		if token = next; token == "" {
			return all, nil
		}
	}
}
