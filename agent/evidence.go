package agent

import "fmt"

// MatchCounts is what a reconciliation found (match.Counts, matchGroupCounts): the groups
// by classification and the orphan records. A tool that matched returns them with its
// result, and the loop holds the latest as trusted evidence against the model's claims.
type MatchCounts struct {
	Groups     int `json:"groups"`
	Full       int `json:"full"`
	Variance   int `json:"variance"`
	MissingLeg int `json:"missing_leg"`
	Orphan     int `json:"orphan"`
}

// Clean reports whether every group is full and nothing is orphaned.
func (m MatchCounts) Clean() bool {
	return m.Groups == m.Full && m.Variance == 0 && m.MissingLeg == 0 && m.Orphan == 0
}

// Discrepant reports whether the counts show a missing leg, a variance or an orphan.
func (m MatchCounts) Discrepant() bool {
	return m.Variance > 0 || m.MissingLeg > 0 || m.Orphan > 0
}

// ClaimRefusal is the observation of a __complete__ refused by the evidence: why, and the
// real counts.
type ClaimRefusal struct {
	Refused     string      `json:"refused"`
	Claim       string      `json:"match_claim,omitempty"`
	MatchCounts MatchCounts `json:"match_counts"`
}

// CheckClaim returns the refusal of a completion claiming claim against evidence, or nil
// when the claim stands: no evidence, no constraint; with evidence a claim is required,
// "clean" only over clean counts, "discrepancies" only over discrepant ones; "none" (the
// answer makes no claim about the match) always stands.
func CheckClaim(evidence *MatchCounts, claim string) *ClaimRefusal {
	if evidence == nil {
		return nil
	}
	r := &ClaimRefusal{Claim: claim, MatchCounts: *evidence}
	switch claim {
	case "":
		r.Refused = "match counts were observed: give match_claim (clean, discrepancies or none) with your answer"
	case ClaimClean:
		if evidence.Clean() {
			return nil
		}
		r.Refused = fmt.Sprintf("the claim of a clean match was refused: the counts show %d variance, %d missing_leg and %d orphan",
			evidence.Variance, evidence.MissingLeg, evidence.Orphan)
	case ClaimDiscrepancies:
		if evidence.Discrepant() {
			return nil
		}
		r.Refused = "the claim of discrepancies was refused: every group is full and there is no orphan"
	case ClaimNone:
		return nil
	default:
		r.Refused = fmt.Sprintf("match_claim %q is not one of clean, discrepancies, none", claim)
	}
	return r
}
