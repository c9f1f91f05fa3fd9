// Local search: relationships from a mapped entity to an entity outside the mapped set (second
// part of the Relationships table, after local_relationships_inside.cypher).
//
// Parameters
//   $entity_ids           list of mapped entity ids
//   $top_k_relationships  per mapped entity (query.local.top_k_relationships, default 10)
// Ranking (as graphrag_assets.query.local_search.rank_relationships): outside entities linked to
// more of the mapped entities first (links), then combined degree (higher first, missing last),
// then human_readable_id; at most top_k_relationships x the number of mapped entities rows.
UNWIND $entity_ids AS entity_id
MATCH (a:Entity {id: entity_id})-[r:RELATED]-(o:Entity)
WHERE NOT o.id IN $entity_ids
WITH o, collect(r) AS touching, count(DISTINCT a) AS links
UNWIND touching AS r
WITH r, links
ORDER BY links DESC, r.combined_degree IS NULL, r.combined_degree DESC, r.human_readable_id
WITH collect({r: r, links: links})[0..$top_k_relationships * size($entity_ids)] AS kept
UNWIND kept AS k
WITH k.r AS r, k.links AS links
RETURN r.id AS id, r.human_readable_id AS human_readable_id, startNode(r).title AS source,
       endNode(r).title AS target, r.description AS description, r.weight AS weight,
       r.combined_degree AS combined_degree, links
ORDER BY links DESC, combined_degree IS NULL, combined_degree DESC, human_readable_id
