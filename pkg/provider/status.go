package provider

// StatusError returns the typed error an HTTP status code of a provider's API answer means:
// 401 and 403 ErrInvalidCredentials, 404 ErrZoneNotFound, 400 ErrInvalidChange, 409 and 412
// ErrConflict, 5xx ErrUnavailable; nil for any other code. A 429 is the caller's, which reads
// its API's Retry-After into a ThrottledError. The codes are RFC 9110's, written out so that
// this package (which the pure core imports) stays free of net/http.
func StatusError(code int) error {
	switch {
	case code == 401 || code == 403:
		return ErrInvalidCredentials
	case code == 404:
		return ErrZoneNotFound
	case code == 400:
		return ErrInvalidChange
	case code == 409 || code == 412:
		return ErrConflict
	case code >= 500:
		return ErrUnavailable
	}
	return nil
}
