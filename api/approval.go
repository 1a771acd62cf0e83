package api

// ApprovalAnswer is the body that answers an approval request
// (approval_required): POST /v1/turns/{turn}/approvals/{call}. Reason is
// what the model reads when the call is refused.
type ApprovalAnswer struct {
	Decision Decision `json:"decision"`
	Reason   string   `json:"reason"`
}

// Decision is an answer to an approval request.
type Decision string

const (
	DecisionAllow  Decision = "allow"
	DecisionDeny   Decision = "deny"
	DecisionAlways Decision = "always" // allow this tool for the rest of the session
)
