package gateway

import (
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/svcflow/svcflow/hosts/gateway/gwstore"
	"github.com/svcflow/svcflow/hosts/license"
)

var errRevoked = errors.New("the license was revoked")

var errNoLicensing = newProblem(http.StatusNotFound, "licensing_not_configured",
	"this gateway has no license public key (--license-public-key or SVC_LICENSE_PUBLIC_KEY)")

func (s *Server) registerLicensing(pub ed25519.PublicKey, previous []ed25519.PublicKey) {
	keys := append([]ed25519.PublicKey{pub}, previous...)
	o := huma.Operation{OperationID: "license-public-key", Method: http.MethodGet, Path: "/licensing/public-key",
		Summary: "The key licenses are verified with", Tags: []string{"Licensing"}}
	o = publicOp(o, http.StatusNotFound)
	huma.Register(s.api, o, func(ctx context.Context, _ *struct{}) (*struct {
		Body struct {
			Algorithm string `json:"algorithm"`
			PublicKey string `json:"public_key" doc:"Base64 of the 32-byte Ed25519 public key."`
		}
	}, error) {
		if pub == nil {
			return nil, errNoLicensing
		}
		out := &struct {
			Body struct {
				Algorithm string `json:"algorithm"`
				PublicKey string `json:"public_key" doc:"Base64 of the 32-byte Ed25519 public key."`
			}
		}{}
		out.Body.Algorithm, out.Body.PublicKey = "Ed25519", license.EncodePublic(pub)
		return out, nil
	})

	o = huma.Operation{OperationID: "validate-license", Method: http.MethodPost, Path: "/licensing/validate",
		Summary: "Check an on-premises license", Tags: []string{"Licensing"}, MaxBodyBytes: 1 << 16,
		Description: "valid is true when the signature verifies with this gateway's public key (or, during a rotation, a key before it) and now is within not_before..expires_at; " +
			"otherwise reason says why (bad_signature, malformed, not_yet_valid, expired, revoked). The payload is returned when the signature verifies."}
	o = publicOp(o, http.StatusNotFound, http.StatusUnprocessableEntity)
	huma.Register(s.api, o, func(ctx context.Context, in *struct {
		Body struct {
			License string `json:"license" maxLength:"8192"`
		}
	}) (*struct {
		Body struct {
			Valid   bool             `json:"valid"`
			Reason  string           `json:"reason,omitempty"`
			License *license.License `json:"license,omitempty"`
		}
	}, error) {
		if pub == nil {
			return nil, errNoLicensing
		}
		out := &struct {
			Body struct {
				Valid   bool             `json:"valid"`
				Reason  string           `json:"reason,omitempty"`
				License *license.License `json:"license,omitempty"`
			}
		}{}
		l, err := license.VerifyAny(in.Body.License, keys, s.now())
		out.Body.License = l
		if err == nil && l.ID != "" {
			// A license this deployment issued and the operator revoked.
			il, gerr := s.store.GetLicense(ctx, l.ID)
			switch {
			case gerr == nil && il.RevokedAt != nil && !s.now().Before(*il.RevokedAt):
				err = errRevoked
			case gerr != nil && !errors.Is(gerr, gwstore.ErrNotFound):
				return nil, s.fail(ctx, gerr, "")
			}
		}
		switch {
		case err == nil:
			out.Body.Valid = true
		case errors.Is(err, errRevoked):
			out.Body.Reason = "revoked"
		case errors.Is(err, license.ErrBadSignature):
			out.Body.Reason = "bad_signature"
		case errors.Is(err, license.ErrNotYetValid):
			out.Body.Reason = "not_yet_valid"
		case errors.Is(err, license.ErrExpired):
			out.Body.Reason = "expired"
		default:
			out.Body.Reason = "malformed"
		}
		return out, nil
	})
}

// registerAccountLicenses is the account's view of the licenses the operator issued it.
func (s *Server) registerAccountLicenses() {
	huma.Register(s.api, s.accountRoute(managementOp(huma.Operation{OperationID: "list-licenses", Method: http.MethodGet, Path: "/gateway/licenses",
		Summary: "The account's on-premises licenses", Tags: []string{"Licensing"}})), s.accountLicenses)
}

func (s *Server) accountLicenses(ctx context.Context, _ *struct{}) (*licenseListOutput, error) {
	return s.licenses(ctx, accountIn(ctx).ID)
}
