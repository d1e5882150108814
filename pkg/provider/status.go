package provider

import "net/http"

// StatusError returns the typed error an HTTP status code of a provider's API answer means:
// 401 and 403 ErrInvalidCredentials, 404 ErrZoneNotFound, 400 ErrInvalidChange, 409 and 412
// ErrConflict, 5xx ErrUnavailable; nil for any other code. A 429 is the caller's, which reads
// its API's Retry-After into a ThrottledError.
func StatusError(code int) error {
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return ErrInvalidCredentials
	case code == http.StatusNotFound:
		return ErrZoneNotFound
	case code == http.StatusBadRequest:
		return ErrInvalidChange
	case code == http.StatusConflict || code == http.StatusPreconditionFailed:
		return ErrConflict
	case code >= http.StatusInternalServerError:
		return ErrUnavailable
	}
	return nil
}
