// Local search: the mapped entities, in mapping order (the context's Entities table).
//
// Parameters
//   $entity_ids  list of entity ids, in the order the question mapped them (most similar first);
//                local search maps the question's embedding to the nearest entity descriptions.
// Returns one row per entity found: id, human_readable_id, title, description, degree, entity_order.
UNWIND range(0, size($entity_ids) - 1) AS entity_order
MATCH (e:Entity {id: $entity_ids[entity_order]})
RETURN e.id AS id, e.human_readable_id AS human_readable_id, e.title AS title,
       e.description AS description, e.degree AS degree, entity_order
ORDER BY entity_order
