// Local search: relationships between two mapped entities (first part of the Relationships table).
//
// Parameters
//   $entity_ids  list of mapped entity ids
// Ranking (as graphrag_assets.query.local_search.rank_relationships): combined degree (higher
// first, missing last), then human_readable_id. Every such relationship is returned; the context
// keeps as many as its token budget allows.
UNWIND $entity_ids AS entity_id
MATCH (a:Entity {id: entity_id})-[r:RELATED]->(b:Entity)
WHERE b.id IN $entity_ids
RETURN r.id AS id, r.human_readable_id AS human_readable_id, a.title AS source, b.title AS target,
       r.description AS description, r.weight AS weight, r.combined_degree AS combined_degree
ORDER BY r.combined_degree IS NULL, r.combined_degree DESC, human_readable_id
