package gateway

// LimiterLen is how many rate-limit buckets the gateway holds.
func (s *Server) LimiterLen() int { return s.limiters.Len() }
