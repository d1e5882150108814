package provider

// SignerSource is implemented by the decorators of a Provider (pkg/provider/guard,
// pkg/provider/counting, the factory's credential namer): the provider they wrap may be a
// KeySigner or a ManagedSigner, which the decorator itself never is, so that a type assertion on
// it says nothing it cannot do. Each method returns the wrapped provider's signer behind the
// decorator's own protections (rate limit and retries, counting, credential hints), or nil when
// the wrapped provider signs no zone that way.
type SignerSource interface {
	KeySigner() KeySigner
	ManagedSigner() ManagedSigner
	KSKRoller() KSKRoller
}

// KeySignerOf is p's KeySigner: p itself when it is one, the one a decorator passes through
// (SignerSource), else nil.
func KeySignerOf(p Provider) KeySigner {
	switch v := p.(type) {
	case KeySigner:
		return v
	case SignerSource:
		return v.KeySigner()
	}
	return nil
}

// ManagedSignerOf is p's ManagedSigner: p itself when it is one, the one a decorator passes
// through (SignerSource), else nil.
func ManagedSignerOf(p Provider) ManagedSigner {
	switch v := p.(type) {
	case ManagedSigner:
		return v
	case SignerSource:
		return v.ManagedSigner()
	}
	return nil
}

// KSKRollerOf is p's KSKRoller: p itself when it is one, the one a decorator passes through
// (SignerSource), else nil.
func KSKRollerOf(p Provider) KSKRoller {
	switch v := p.(type) {
	case KSKRoller:
		return v
	case SignerSource:
		return v.KSKRoller()
	}
	return nil
}
