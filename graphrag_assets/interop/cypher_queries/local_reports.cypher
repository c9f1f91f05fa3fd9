// Local search: reports of the communities the mapped entities belong to (the Reports table).
//
// Parameters
//   $entity_ids       list of mapped entity ids
//   $community_level  deepest community level to use, or null for every level
// Ranking (as graphrag_assets.query.local_search.rank_reports): communities holding more of the
// mapped entities first, then the report's rank (higher first, missing last), then the community
// number. Each community appears once, whatever its level.
UNWIND $entity_ids AS entity_id
MATCH (e:Entity {id: entity_id})-[:IN_COMMUNITY]->(c:Community)-[:HAS_REPORT]->(r:Report)
WHERE $community_level IS NULL OR c.level <= $community_level
WITH c, r, count(DISTINCT e) AS matched_entities
RETURN r.id AS id, r.human_readable_id AS human_readable_id, r.title AS title, r.summary AS summary,
       r.full_content AS full_content, r.rank AS rank, c.community AS community, c.level AS level,
       matched_entities
ORDER BY matched_entities DESC, r.rank IS NULL, r.rank DESC, community
