// Local search: text units of the mapped entities (the Sources table).
//
// Parameters
//   $entity_ids  list of mapped entity ids, in mapping order
// Ranking (as graphrag_assets.query.local_search.rank_text_units): a text unit belongs to the
// first mapped entity that mentions it; units go by that entity's place in the mapping, then by
// how many of that entity's relationships cite the unit (more first), then by the unit's place in
// the entity's text_unit_ids (the MENTIONED_IN edge's position).
UNWIND range(0, size($entity_ids) - 1) AS entity_order
MATCH (:Entity {id: $entity_ids[entity_order]})-[:MENTIONED_IN]->(t:TextUnit)
WITH t, min(entity_order) AS entity_order
MATCH (e:Entity {id: $entity_ids[entity_order]})-[m:MENTIONED_IN]->(t)
OPTIONAL MATCH (e)-[r:RELATED]-(:Entity)
WHERE t.id IN r.text_unit_ids
WITH t, entity_order, m.position AS position, count(r) AS links
RETURN t.id AS id, t.human_readable_id AS human_readable_id, t.document_id AS document_id, t.text AS text,
       entity_order, links, position
ORDER BY entity_order, links DESC, position
