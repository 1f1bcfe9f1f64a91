"""Texts from outside both built-in data sets, written for these tests: restaurant reviews, which
a news model reads as news and a tweet model as a long tweet."""

REVIEWS = [
    "We booked a table for four on Friday night. The waiter was friendly and brought fresh bread "
    "straight away. My risotto was creamy but a little too salty, and the lamb was cooked perfectly. "
    "Dessert was the highlight: a warm chocolate tart with vanilla ice cream. We will come back.",
    "The pizza arrived cold and the crust was soggy. We waited forty minutes for our starters. "
    "The manager apologised and took the drinks off the bill, which was kind. Still, I would not "
    "order the seafood pasta again.",
    "Lovely little bistro near the station. The soup of the day was pumpkin with ginger, and the "
    "portions were generous. Prices are fair and the wine list is short but well chosen. Booking "
    "is essential at weekends.",
    "Terrible service. Our order was wrong twice and the chips were burnt. The table was sticky and "
    "nobody cleared the plates. The only good thing was the lemonade.",
    "A cosy cafe with excellent coffee and homemade cakes. The carrot cake was moist and the scones "
    "came with plenty of clotted cream and jam. Staff were relaxed and let us stay for hours.",
    "The tasting menu had seven courses, each paired with a wine. The scallops with pea puree were "
    "wonderful, the duck less so. Service was attentive without being fussy. Expensive, but a "
    "memorable birthday dinner.",
    "Ordered the chicken curry and garlic naan for takeaway. It was ready in ten minutes, hot and "
    "full of flavour. The rice was fluffy. Great value for a weeknight meal.",
    "Disappointing brunch. The eggs benedict were overcooked, the hollandaise split and the toast "
    "was stale. The orange juice tasted like it came from a carton. We left hungry.",
    "Friendly family restaurant with a play area for the children. The kids' menu is cheap and the "
    "burgers are juicy. The salads could use more dressing. Parking is easy.",
    "Best sushi in town. The salmon nigiri melts in the mouth and the miso soup is rich. The chef "
    "greets every guest at the counter. Sit at the bar if you can.",
    "The vegan options were limited to one pasta dish and a side salad. The dish itself was tasty, "
    "with roasted peppers and basil, but the dessert menu had nothing without dairy.",
    "Noisy and crowded, but the steak was superb and the peppercorn sauce was the best I have had. "
    "The fries were crisp. Service was slow because they were so busy. Book early.",
]
