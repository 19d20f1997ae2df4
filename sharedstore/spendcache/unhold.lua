-- Unhold: end a spend reservation (its call settled, was released, or its
-- admission refused after the preflight held it), exactly once: the hold's
-- entry is deleted in the same script, so a retry gives nothing back twice.
-- KEYS[1]: the team's held hash, KEYS[2]: its holds hash, KEYS[3]: its
--   expiry set (see preflight.lua). ARGV[1]: the hold id.
-- Reply: 1 when a reservation was ended now, 0 when there was none.
return endhold(KEYS[1], KEYS[2], KEYS[3], ARGV[1])
