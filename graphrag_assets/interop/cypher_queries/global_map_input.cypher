// Global search: the reports its map step reads, with their occurrence weights.
//
// Parameters
//   $community_level  the level to answer at (query.global.community_level, default 2)
// Which reports (as graphrag_assets.query.global_search.reports_at_level with roll_up, the
// default): every entity contributes the report of its deepest community at a level <= the given
// one among communities that have a report; the reports are the union of those, by
// human_readable_id. occurrence_weight (as occurrence_weights, rounded to 4 places): the distinct
// text units mentioning the community's entities, divided by the largest such count among them.
// (Dynamic community selection asks the model to rate reports and has no Cypher equivalent.)
MATCH (e:Entity)-[:IN_COMMUNITY]->(c:Community)-[:HAS_REPORT]->(:Report)
WHERE c.level <= $community_level
WITH e, max(c.level) AS deepest_level
MATCH (e)-[:IN_COMMUNITY]->(c:Community {level: deepest_level})-[:HAS_REPORT]->(:Report)
WITH e, min(c.community) AS community
WITH DISTINCT community
MATCH (c:Community {community: community})-[:HAS_REPORT]->(r:Report)
MATCH (c)<-[:IN_COMMUNITY]-(member:Entity)
OPTIONAL MATCH (member)-[:MENTIONED_IN]->(t:TextUnit)
WITH c, r, count(DISTINCT t) AS units
WITH collect({c: c, r: r, units: units}) AS rows, max(units) AS most
UNWIND rows AS row
WITH row.c AS c, row.r AS r, CASE WHEN most > 0 THEN toFloat(row.units) / most ELSE 0.0 END AS weight
RETURN r.id AS id, r.human_readable_id AS human_readable_id, r.title AS title,
       round(weight * 10000) / 10000.0 AS occurrence_weight, r.full_content AS full_content, r.rank AS rank,
       c.community AS community, c.level AS level
ORDER BY human_readable_id
